/* The library's implementation in a translation unit of its own, compiled
   once and linked into the test programs that use only the public API
   (Makefile: SHARED_IMPL_TESTS), as a project that includes mysample.h in
   several files does. Each of those tests built the whole implementation
   itself before: 8 x 13 s of the suite's build on the 2-core machine. */
#define MYSAMPLE_IMPLEMENTATION
#include "mysample.h"
