#!/usr/bin/env bash
# The library on a 32-bit x86 build (tests/m32/m32.c): sizes past 4 GiB
# are refused, not wrapped; the scalar kernels' exp is right under x87
# math. Built with i686-linux-gnu-gcc (Debian's
# gcc-i686-linux-gnu and libc6-dev-i386-cross) or `cc -m32`, linked
# statically and run natively (or under qemu-i386). SKIP when neither
# compiler can build a 32-bit program.
set -u
cd "$(dirname "$0")/.."
mkdir -p build
out=build/m32_test
cc32=
if command -v i686-linux-gnu-gcc >/dev/null; then cc32="i686-linux-gnu-gcc"
elif echo 'int main(void){return 0;}' | ${CC:-cc} -m32 -x c - -o build/m32_probe >/dev/null 2>&1; then cc32="${CC:-cc} -m32"
fi
if [ -z "$cc32" ]; then echo "SKIP m32: no 32-bit x86 C compiler (gcc-i686-linux-gnu or multilib)"; exit 0; fi
if ! $cc32 -O1 -std=c99 -Wall -Wextra -Wpedantic -Werror -I. -Itests -DMYSAMPLE_THREADS -static -o $out tests/m32/m32.c -lm -lpthread > $out.log 2>&1; then
  # a static libc may be missing: try a dynamic build
  if ! $cc32 -O1 -std=c99 -Wall -Wextra -Wpedantic -Werror -I. -Itests -DMYSAMPLE_THREADS -o $out tests/m32/m32.c -lm -lpthread > $out.log 2>&1; then
    cat $out.log; echo "FAIL m32: build"; exit 1
  fi
fi
if $out > $out.run 2>&1; then cat $out.run; exit 0; fi
if command -v qemu-i386 >/dev/null && qemu-i386 -L /usr/i686-linux-gnu $out > $out.run 2>&1; then cat $out.run; exit 0; fi
cat $out.run; echo "FAIL m32: tests/m32/m32.c"; exit 1
