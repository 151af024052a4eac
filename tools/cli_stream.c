/* placeholder until the egress work lands (replaced by cli_stream.c proper) */
#include "cli.h"
#include <stdio.h>
int ms_cli_stream(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "mysample stream: not built yet\n"); return 2; }
int ms_cli_bench_egress(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "mysample bench-egress: not built yet\n"); return 2; }
