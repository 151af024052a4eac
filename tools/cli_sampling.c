#include "cli.h"
#include <stdio.h>
int ms_cli_sampling(const char *cmd, int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "%s: todo\n", cmd); return 2; }
