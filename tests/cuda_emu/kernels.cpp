/* The real src/cuda/kernels.cu compiled as host C++ for the CPU emulator:
   the shim supplies everything CUDA would, and the table of kernels (the
   extern "C" __global__ functions with their __launch_bounds__) is
   generated from kernels.cu by mk/cuda_emu.mk, so no name is listed by hand. */
#include "shim.h"
#include "kernels.cu"
#include <cstddef>

/* tests/test_cuda.c reads a row's route from its selection state */
static_assert(offsetof(Sel, cand) == 68, "T_SEL_CAND in tests/test_cuda.c");
static_assert(offsetof(Sel, tsum) == offsetof(Sel, hist) + sizeof(((Sel *)0)->hist), "F_KFAST's scratch: Sel.hist and Sel.tsum adjacent");

static const ms_emu_kernel ms_emu_kernels_cu[] = {
#define MS_EMU_KERNEL(name, bound) MS_EMU_KERNEL_ENTRY(name, bound),
#include "kernel_table.inc"
#undef MS_EMU_KERNEL
};

/* fx_of (the mass histograms' integer weight, computed from the float's
   bits) against the double formula it replaces, (u64)((double)min(w, 1) *
   2^44 + 0.5): every float in [0, 1] with a stride, every bit pattern
   within 4096 of each power of two, and some above 1. Returns how many
   differ (*first: the first such bit pattern) and counts the checks. */
static int fx_differs(uint32_t b) {
  float w;
  memcpy(&w, &b, 4);
  const uint64_t want = (uint64_t)((double)fminf(w, 1.0f) * MS_FX + 0.5);
  return fx_of(w) != want;
}
extern "C" __attribute__((visibility("default"))) unsigned long long msEmuCheckFx(unsigned long long *checked, uint32_t *first) {
  unsigned long long bad = 0, n = 0;
  uint32_t b, k;
  *first = 0;
  for (b = 0; b <= 0x3f800000u; b += 37u, n++) if (fx_differs(b) && !bad++) *first = b;
  for (k = 0; k <= 128u; k++)
    for (b = (k << 23) > 4096u ? (k << 23) - 4096u : 0u; b < (k << 23) + 4096u; b++, n++)
      if (fx_differs(b) && !bad++) *first = b;
  for (b = 0x3f800001u; b < 0x7f800000u; b += 4099u, n++) if (fx_differs(b) && !bad++) *first = b;
  if (fx_differs(0x80000000u) && !bad++) *first = 0x80000000u;   /* -0 */
  *checked = n + 1;
  return bad;
}

namespace {
struct registrar {
  registrar() { ms_emu_register_kernels(ms_emu_kernels_cu, (int)(sizeof ms_emu_kernels_cu / sizeof ms_emu_kernels_cu[0])); }
};
registrar reg;
}
