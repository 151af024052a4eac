/* The real src/cuda/kernels.cu compiled as host C++ for the CPU emulator:
   the shim supplies everything CUDA would, and the table of kernels (the
   extern "C" __global__ functions with their __launch_bounds__) is
   generated from kernels.cu by mk/cuda_emu.mk, so no name is listed by hand. */
#include "shim.h"
/* the L2 prefetches on, 32 KB ahead (a hint on a GPU, off there by
   default): the emulator checks each one's range (ms_emu_l2_prefetch) */
#define MS_L2PF 32
#include "kernels.cu"
#include <cstddef>

/* tests/test_cuda.c reads a row's route from its selection state */
static_assert(offsetof(Sel, cand) == 68, "T_SEL_CAND in tests/test_cuda.c");
static_assert(offsetof(Sel, hist) == 112 && sizeof(((Sel *)0)->hist) == 2048 * 8, "T_SEL_HIST, T_SEL_HIST_WORDS in tests/test_cuda.c");
static_assert(offsetof(Sel, tsum) == offsetof(Sel, hist) + sizeof(((Sel *)0)->hist), "F_KFAST's scratch: Sel.hist and Sel.tsum adjacent");

static const ms_emu_kernel ms_emu_kernels_cu[] = {
#define MS_EMU_KERNEL(name, bound) MS_EMU_KERNEL_ENTRY(name, bound),
#include "kernel_table.inc"
#undef MS_EMU_KERNEL
};

/* fxw (a logit's integer mass: the exact weight's 2^-44 units, no exp
   under e^-32) against llrint(wgt * 2^44) in double: every 37th float in
   [-40, 0] (the scaled logit: M = 0, S = 1), and -inf. Returns how many
   differ (*first: the first such bit pattern) and counts the checks. */
static int fxw_differs(uint32_t b) {
  float x;
  memcpy(&x, &b, 4);
  const uint64_t want = (uint64_t)llrint((double)wgt(x, 0.0f, 1.0f) * MS_FX);
  return fxw(x, 0.0f, 1.0f) != want;
}
extern "C" __attribute__((visibility("default"))) unsigned long long msEmuCheckFx(unsigned long long *checked, uint32_t *first) {
  unsigned long long bad = 0, n = 0;
  uint32_t b;
  *first = 0;
  for (b = 0x80000000u; b <= 0xc2200000u; b += 37u, n++) if (fxw_differs(b) && !bad++) *first = b;   /* -0 .. -40 */
  if (fxw_differs(0xff800000u) && !bad++) *first = 0xff800000u;   /* -inf */
  *checked = n + 1;
  return bad;
}

namespace {
struct registrar {
  registrar() { ms_emu_register_kernels(ms_emu_kernels_cu, (int)(sizeof ms_emu_kernels_cu / sizeof ms_emu_kernels_cu[0])); }
};
registrar reg;
}
