# The CPU emulator of the CUDA driver (tests/cuda_emu/): a fake libcuda
# that runs src/cuda/kernels.cu on the CPU, so mysample_cuda.h's kernels
# and launch code run in tests without a GPU. Needs only a C++ compiler.
# tests/cuda_emu.test.sh builds and runs it; `make cuda-emu` builds it.
EMU_DIR   := $(BUILD)/cuda_emu
EMU_SRCS  := tests/cuda_emu/driver.cpp tests/cuda_emu/runtime.cpp tests/cuda_emu/kernels.cpp tests/cuda_emu/selftest.cpp
EMU_DEPS  := $(EMU_SRCS) tests/cuda_emu/exports.map tests/cuda_emu/shim.h tests/cuda_emu/runtime.h src/cuda/kernels.cu \
             tests/cuda_emu/selftest_kernels.cu tests/cuda_emu/shared.ld $(EMU_DIR)/kernel_table.inc $(EMU_DIR)/selftest_table.inc
# -ffp-contract=off: the __f*_rn intrinsics stay single IEEE operations.
# -Wno-unknown-pragmas: CUDA's `#pragma unroll`.
EMU_FLAGS := -std=c++14 -fPIC -shared -fvisibility=hidden -ffp-contract=off -Wall -Wextra -Werror \
             -Wno-unknown-pragmas -Isrc/cuda -Itests/cuda_emu -I$(EMU_DIR)
EMU_SAN   := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all

.PHONY: cuda-emu
cuda-emu: $(EMU_DIR)/libcuda_emu.so $(EMU_DIR)/test_emu

# The kernel tables: every `extern "C" __global__` function of a .cu file,
# with its __launch_bounds__ (1024 without one).
$(EMU_DIR)/kernel_table.inc: src/cuda/kernels.cu mk/cuda_emu.mk
	@mkdir -p $(EMU_DIR)
	sed -n -e 's/^extern "C" __global__ void __launch_bounds__(\([^,)]*\)[^)]*) *\([A-Za-z_][A-Za-z0-9_]*\) *(.*/MS_EMU_KERNEL(\2, \1)/p' \
	       -e 's/^extern "C" __global__ void \([A-Za-z_][A-Za-z0-9_]*\) *(.*/MS_EMU_KERNEL(\1, 1024)/p' $< > $@
$(EMU_DIR)/selftest_table.inc: tests/cuda_emu/selftest_kernels.cu mk/cuda_emu.mk
	@mkdir -p $(EMU_DIR)
	sed -n -e 's/^extern "C" __global__ void __launch_bounds__(\([^,)]*\)[^)]*) *\([A-Za-z_][A-Za-z0-9_]*\) *(.*/MS_EMU_KERNEL(\2, \1)/p' \
	       -e 's/^extern "C" __global__ void \([A-Za-z_][A-Za-z0-9_]*\) *(.*/MS_EMU_KERNEL(\1, 1024)/p' $< > $@

# emu_link(compile flags, kernels' extra flags): the four sources compiled
# apart into $@.o/, so that shared.ld finds the kernels' objects (gcc puts
# a template function's __shared__ static in .bss, not in the shared
# section: the link moves those of kernels.o and selftest.o there), then
# linked.
EMU_LINK_FLAGS := -lpthread -Wl,--version-script=tests/cuda_emu/exports.map -Wl,-T,tests/cuda_emu/shared.ld
define emu_link
	@mkdir -p $@.o
	$(CXX) $(filter-out -shared,$(1)) $(2) -c tests/cuda_emu/kernels.cpp -o $@.o/kernels.o
	$(CXX) $(filter-out -shared,$(1)) $(2) -c tests/cuda_emu/selftest.cpp -o $@.o/selftest.o
	$(CXX) $(filter-out -shared,$(1)) -c tests/cuda_emu/driver.cpp -o $@.o/driver.o
	$(CXX) $(filter-out -shared,$(1)) -c tests/cuda_emu/runtime.cpp -o $@.o/runtime.o
	$(CXX) -shared $(1) $(2) -o $@ $@.o/kernels.o $@.o/selftest.o $@.o/driver.o $@.o/runtime.o $(EMU_LINK_FLAGS)
endef

$(EMU_DIR)/libcuda_emu.so: $(EMU_DEPS)
	$(call emu_link,-O2 $(EMU_FLAGS))

# The same under AddressSanitizer + UndefinedBehaviorSanitizer (load it
# into a program built with the same sanitizers and compiler).
$(EMU_DIR)/libcuda_emu_asan.so: $(EMU_DEPS)
	$(call emu_link,$(EMU_SAN) $(EMU_FLAGS))

# The FMA build: the kernels compiled with contraction on (and FMA
# instructions on x86-64), as NVRTC compiles them for a GPU by default, so
# plain `a * b + c` in kernels.cu fuses while the __f*_rn intrinsics stay
# single roundings. Shows where a result depends on the compiler fusing.
EMU_FMA   := -ffp-contract=fast $(if $(filter x86_64,$(shell uname -m)),-mfma)
$(EMU_DIR)/libcuda_emu_fma.so: $(EMU_DEPS)
	$(call emu_link,-O2 $(filter-out -ffp-contract=off,$(EMU_FLAGS)) $(EMU_FMA))

# The race check: the kernels (and the emulator's self-test kernels)
# under gcc's ThreadSanitizer, the driver and the fibers' engine without
# it, each CUDA thread a TSan fiber ordered only by __syncthreads and
# __syncwarp (runtime.cpp, MS_EMU_TSAN; across blocks on request). The
# program that loads it needs
# libtsan preloaded (EMU_TSAN_RT): tests/ci/cuda_race.sh.
EMU_TSAN_RT := $(shell $(CXX) -print-file-name=libtsan.so)
EMU_RACE_CC := $(filter-out -shared,$(EMU_FLAGS)) -O1 -g -fno-omit-frame-pointer -DMS_EMU_TSAN
$(EMU_DIR)/libcuda_emu_race.so: $(EMU_DEPS)
	$(call emu_link,$(EMU_RACE_CC),-fsanitize=thread)

# The emulator's own tests (driver API error paths, intrinsics, barriers).
$(EMU_DIR)/test_emu: tests/cuda_emu/test_emu.c tests/testlib.h
	@mkdir -p $(EMU_DIR)
	$(CC) $(CFLAGS) $(WARN) -Itests -o $@ $< -ldl -lm
