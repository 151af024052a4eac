/* The emulator's self-test kernels (selftest_kernels.cu) compiled with the
   shim, registered like the real ones. */
#include "shim.h"
#include "selftest_kernels.cu"

static const ms_emu_kernel ms_emu_kernels_selftest[] = {
#define MS_EMU_KERNEL(name, bound) MS_EMU_KERNEL_ENTRY(name, bound),
#include "selftest_table.inc"
#undef MS_EMU_KERNEL
};

namespace {
struct registrar {
  registrar() {
    ms_emu_register_kernels(ms_emu_kernels_selftest, (int)(sizeof ms_emu_kernels_selftest / sizeof ms_emu_kernels_selftest[0]));
  }
};
registrar reg;
}
