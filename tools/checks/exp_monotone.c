/* Checks that mysample's exp (ms__expf, which the GPU kernels repeat
   operation by operation as ms_expf_dev) never increases as its argument
   decreases, for every float from -0 down to -105 (below -104 it is 0).
   The GPU's min_p threshold relies on it (minp_key in src/cuda/kernels.cu:
   a binary search over keys instead of a pass over the row). About half a
   minute on one core; `make exp-monotone`, not part of `make test`.
   Prints the first violations and exits 1 if there is any. */
#define MYSAMPLE_IMPLEMENTATION
#include "../../mysample.h"
#include <stdio.h>
#include <string.h>

int main(void) {
  uint32_t u;
  float x, prev = ms__expf(0.0f);
  long bad = 0, n = 0;
  for (u = 0x80000001u;; u++) {   /* -0 upward in bits: the negative floats, decreasing */
    float y;
    memcpy(&x, &u, 4);
    if (x < -105.0f) break;
    y = ms__expf(x);
    if (y > prev) {
      if (bad < 5) printf("exp not monotone at x = %.9g: %.9g > %.9g\n", (double)x, (double)y, (double)prev);
      bad++;
    }
    prev = y;
    n++;
  }
  printf("%ld arguments from -0 to -105, %ld violations\n", n, bad);
  return bad ? 1 : 0;
}
