/* The CPU emulator's internal interface between the fake driver
   (driver.cpp) and the execution engine (runtime.cpp). */
#ifndef MS_EMU_RUNTIME_H
#define MS_EMU_RUNTIME_H
#include <stddef.h>
#include <stdint.h>

/* Built with AddressSanitizer (gcc or clang)? */
#if defined(__SANITIZE_ADDRESS__)
#  define MS_EMU_ASAN 1
#elif defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define MS_EMU_ASAN 1
#  endif
#endif

/* Runs every block of the grid, one after another. Returns 0, or -1 with
   a message in err (a barrier that cannot complete, a bad block size). */
int ms_emu_run(const ms_emu_kernel *k, ms_emu_dim3 grid, ms_emu_dim3 block, void *const *params,
               char *err, size_t err_size);

/* Launches, blocks and fiber switches so far (MYSAMPLE_CUDA_EMU_STATS). */
void ms_emu_stats(unsigned long long *launches, unsigned long long *blocks, unsigned long long *switches);

/* "rr" (round robin, the default) or "random[:seed]"; 0 or -1. */
int ms_emu_set_schedule(const char *how);

/* "assembly" or "ucontext". */
const char *ms_emu_fiber_kind(void);

/* Describes which allocation an address lies in or next to (driver.cpp). */
void ms_emu_describe_address(uintptr_t a, char *buf, size_t size);

/* Whether [a, a + n) lies inside one allocation (driver.cpp; reads the
   map as describe_address does: a kernel runs under the driver's lock). */
int ms_emu_in_allocation(uintptr_t a, size_t n);

/* The checked L2 prefetches so far and their bytes (ms_emu_l2_prefetch). */
void ms_emu_prefetch_stats(unsigned long long *n, unsigned long long *bytes);

/* A registered kernel by its name, or NULL. */
const ms_emu_kernel *ms_emu_find_kernel(const char *name);
#endif
