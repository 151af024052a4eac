/* mysample_cuda.h declares the few CUDA driver types it passes by pointer
   without cuda.h (cuLaunchKernelEx's CUlaunchConfig and CUlaunchAttribute):
   their layout against the toolkit's cuda.h. A mismatch fails to compile.
   Built and run by tests/cuda_abi.test.sh where a toolkit is installed. */
#include <cuda.h>
#include <stddef.h>
#include <stdio.h>
#define MYSAMPLE_IMPLEMENTATION
#include "mysample.h"
#define MYSAMPLE_CUDA_IMPLEMENTATION
#include "mysample_cuda.h"

#define SAME_FIELD(ours, theirs, a, b) \
  _Static_assert(offsetof(ours, a) == offsetof(theirs, b) && sizeof(((ours *)0)->a) == sizeof(((theirs *)0)->b), \
                 #ours "." #a " against " #theirs "." #b)

_Static_assert(sizeof(ms__cu_launch_attr) == sizeof(CUlaunchAttribute), "CUlaunchAttribute's size");
SAME_FIELD(ms__cu_launch_attr, CUlaunchAttribute, id, id);
SAME_FIELD(ms__cu_launch_attr, CUlaunchAttribute, value, value);
SAME_FIELD(ms__cu_launch_attr, CUlaunchAttribute, value.allowed, value.programmaticStreamSerializationAllowed);
_Static_assert(MS__CU_LAUNCH_ATTR_PROGRAMMATIC_SERIALIZATION == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
               "the attribute's id");
_Static_assert(sizeof(ms__cu_launch_config) == sizeof(CUlaunchConfig), "CUlaunchConfig's size");
SAME_FIELD(ms__cu_launch_config, CUlaunchConfig, grid_x, gridDimX);
SAME_FIELD(ms__cu_launch_config, CUlaunchConfig, grid_y, gridDimY);
SAME_FIELD(ms__cu_launch_config, CUlaunchConfig, grid_z, gridDimZ);
SAME_FIELD(ms__cu_launch_config, CUlaunchConfig, block_x, blockDimX);
SAME_FIELD(ms__cu_launch_config, CUlaunchConfig, block_y, blockDimY);
SAME_FIELD(ms__cu_launch_config, CUlaunchConfig, block_z, blockDimZ);
SAME_FIELD(ms__cu_launch_config, CUlaunchConfig, shared_bytes, sharedMemBytes);
SAME_FIELD(ms__cu_launch_config, CUlaunchConfig, stream, hStream);
SAME_FIELD(ms__cu_launch_config, CUlaunchConfig, attrs, attrs);
SAME_FIELD(ms__cu_launch_config, CUlaunchConfig, n_attrs, numAttrs);

int main(void) {
  printf("PASS cuda-abi: CUlaunchConfig (%u bytes) and CUlaunchAttribute (%u bytes) as cuda.h %d lays them out\n",
         (unsigned)sizeof(CUlaunchConfig), (unsigned)sizeof(CUlaunchAttribute), CUDA_VERSION);
  return 0;
}
