/* placeholder until the CUDA work lands (replaced by cli_cuda.c proper) */
#include "cli.h"
#include <stdio.h>
int ms_cli_cuda_compile(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "mysample cuda-compile: not built yet\n"); return 2; }
