/* Setting and removing environment variables in tests, on POSIX and on
   Windows (_putenv_s: an empty value removes the variable there). A test
   that includes this defines _POSIX_C_SOURCE (200112L or later) before
   any header. */
#ifndef MS_TENV_H
#define MS_TENV_H
#include <stdlib.h>

/* value NULL: remove the variable */
static void t_setenv(const char *name, const char *value) {
#ifdef _WIN32
  _putenv_s(name, value ? value : "");
#else
  if (value) setenv(name, value, 1); else unsetenv(name);
#endif
}
#endif
