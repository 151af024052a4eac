/* Subcommands of the mysample command-line tool. Each lives in its own
   tools/cli_*.c file and returns the process exit status. */
#ifndef MS_CLI_H
#define MS_CLI_H
#include "mysample.h"
int ms_cli_sampling(const char *cmd, int argc, char **argv);   /* probs, sample, logprobs: cli_sampling.c */
int ms_cli_bench(int argc, char **argv);                        /* bench: cli_bench.c */
int ms_cli_stream(int argc, char **argv);                       /* stream: cli_stream.c */
int ms_cli_bench_egress(int argc, char **argv);                 /* bench-egress: cli_stream.c */
int ms_cli_cuda_compile(int argc, char **argv);                 /* cuda-compile: cli_cuda.c */
#endif
