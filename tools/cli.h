/* Subcommands of the mysample command-line tool. Each lives in its own
   tools/cli_*.c file and returns the process exit status. */
#ifndef MS_CLI_H
#define MS_CLI_H
#include "mysample.h"
int ms_cli_sampling(const char *cmd, int argc, char **argv);   /* probs, sample, logprobs: cli_sampling.c */
int ms_cli_bench(int argc, char **argv);                        /* bench: cli_bench.c */
int ms_cli_bench_cuda(int argc, char **argv);                   /* bench --device cuda: cli_bench_cuda.c */
int ms_cli_stream(int argc, char **argv);                       /* stream: cli_stream.c */
int ms_cli_bench_egress(int argc, char **argv);                 /* bench-egress: cli_stream.c */
int ms_cli_cuda_compile(int argc, char **argv);                 /* cuda-compile: cli_cuda.c */

/* probs / sample / logprobs --device cuda (cli_device.c): one row at a
   time on the GPU, with one device-side sequence slot that holds the
   prompt and output ids (penalties, min_tokens) and, with --accept, the
   draws. cli_sampling.c prints the results exactly as for the CPU. */
typedef struct ms_cli_gpu ms_cli_gpu;
/* Creates the GPU sampler for rows of `vocab`, up to `top` top logprobs
   and sequences of up to `history` tokens. On failure msg says why (no driver, no GPU, no NVRTC, ...). */
ms_result ms_cli_gpu_open(ms_cli_gpu **g, int32_t vocab, int32_t top, int32_t history, char *msg, size_t msg_size);
void ms_cli_gpu_close(ms_cli_gpu *g);
/* Uploads a row and restarts the slot: the prompt (with p's reasoning
   budget, as ms_seq_reset), then the output ids. */
ms_result ms_cli_gpu_begin_row(ms_cli_gpu *g, const float *row, const int32_t *prompt, int32_t n_prompt,
                               const int32_t *output, int32_t n_output, const ms_params *p);
/* The slot's reasoning budget state (ms_seq_budget_state's answer). */
ms_result ms_cli_gpu_budget_state(ms_cli_gpu *g, ms_budget_state *state, int32_t *remaining);
/* ms_probs / ms_sample on the GPU. The return is the call's (MS_ERR_UNSUPPORTED
   when the GPU path refuses p); a row error the device found (NaN, all
   masked) comes back as the return too, after the copy back. sample:
   out->token, logprob, rank, n_top, top[] (up to out->top_capacity), greedy;
   given >= 0 scores that token instead of drawing (ms_cuda_batch.score_tokens);
   accept appends the token to the slot on the device. seed and position
   are the CPU sequence's (the draw's, and XTC's coin in probs). */
ms_result ms_cli_gpu_probs(ms_cli_gpu *g, const ms_params *p, uint64_t seed, uint64_t position, float *probs);
ms_result ms_cli_gpu_sample(ms_cli_gpu *g, const ms_params *p, uint64_t seed, uint64_t position, int accept, ms_output *out,
                            int32_t given);
/* The name of what in p the GPU path does not implement (for the message
   after MS_ERR_UNSUPPORTED), or a generic phrase. */
const char *ms_cli_gpu_unsupported(const ms_params *p, int32_t top);
/* The library's reason for the last refused call or row (ms_cuda_last_error,
   without its "row 0: "), "" when none. */
const char *ms_cli_gpu_error(const ms_cli_gpu *g);
#endif
