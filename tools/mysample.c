/* mysample: command-line front end over raw float32 logits files and token
   streams. This file holds the implementation of the header and main(). */
#define MYSAMPLE_IMPLEMENTATION
#include "cli.h"
#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f,
    "mysample %s - token sampling and OpenAI streaming from the command line\n"
    "\n"
    "usage: mysample COMMAND [flags]   (mysample COMMAND --help for its flags)\n"
    "  probs         the final distribution of each row (JSON lines)\n"
    "  sample        seeded draws from each row\n"
    "  logprobs      the sampled token's logprob, rank and the top N\n"
    "                (these three: --device cuda samples on the GPU)\n"
    "  bench         the standard CPU benchmark matrix (--json for JSON lines;\n"
    "                --device cuda: the GPU figures)\n"
    "  stream        token JSON lines on stdin -> OpenAI SSE stream on stdout\n"
    "  bench-egress  speed of the JSON/SSE writer\n"
    "  cuda-compile  compile every GPU kernel with NVRTC (no GPU needed)\n"
    "  version       print the version\n", ms_version());
}

int main(int argc, char **argv) {
  const char *cmd = argc > 1 ? argv[1] : NULL;
  if (!cmd || !strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
    usage(cmd ? stdout : stderr);
    return cmd ? 0 : 2;
  }
  if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) { printf("%s\n", ms_version()); return 0; }
  if (!strcmp(cmd, "probs") || !strcmp(cmd, "sample") || !strcmp(cmd, "logprobs"))
    return ms_cli_sampling(cmd, argc - 1, argv + 1);
  if (!strcmp(cmd, "bench")) return ms_cli_bench(argc - 1, argv + 1);
  if (!strcmp(cmd, "stream")) return ms_cli_stream(argc - 1, argv + 1);
  if (!strcmp(cmd, "bench-egress")) return ms_cli_bench_egress(argc - 1, argv + 1);
  if (!strcmp(cmd, "cuda-compile")) return ms_cli_cuda_compile(argc - 1, argv + 1);
  fprintf(stderr, "mysample: unknown command '%s'\n", cmd);
  usage(stderr);
  return 2;
}
