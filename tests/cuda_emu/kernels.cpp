/* The real src/cuda/kernels.cu compiled as host C++ for the CPU emulator:
   the shim supplies everything CUDA would, and the table of kernels (the
   extern "C" __global__ functions with their __launch_bounds__) is
   generated from kernels.cu by mk/cuda_emu.mk, so no name is listed by hand. */
#include "shim.h"
#include "kernels.cu"

static const ms_emu_kernel ms_emu_kernels_cu[] = {
#define MS_EMU_KERNEL(name, bound) MS_EMU_KERNEL_ENTRY(name, bound),
#include "kernel_table.inc"
#undef MS_EMU_KERNEL
};

namespace {
struct registrar {
  registrar() { ms_emu_register_kernels(ms_emu_kernels_cu, (int)(sizeof ms_emu_kernels_cu / sizeof ms_emu_kernels_cu[0])); }
};
registrar reg;
}
