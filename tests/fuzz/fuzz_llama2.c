/* libFuzzer target for the example llama2.c checkpoint and tokenizer
   loaders (examples/llama2.h): any file contents load or are refused with
   a message, never crash; a loaded model runs a forward pass and a loaded
   tokenizer encodes and decodes. The first input byte picks the target. */
#define _POSIX_C_SOURCE 200809L
#include "llama2.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static char path[64];
  char err[256];
  FILE *f;
  if (size < 1) return 0;
  if (!path[0]) snprintf(path, sizeof path, "/tmp/ms-fuzz-llama2-%d.bin", (int)getpid());
  f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data + 1, 1, size - 1, f);
  fclose(f);
  err[0] = '\0';
  if (data[0] & 1) {
    l2_model *m = NULL;
    if (l2_model_load(&m, path, err, sizeof err) == 0) {
      l2_state *st = l2_state_new(m);
      float *logits = (float *)malloc(sizeof(float) * (size_t)m->c.vocab_size);
      if (st && logits) l2_forward(m, st, 0, logits);
      free(logits); l2_state_free(st); l2_model_free(m);
    } else if (!err[0]) abort();
  } else {
    l2_tokenizer *t = NULL;
    if (l2_tokenizer_load(&t, path, 64, err, sizeof err) == 0) {
      int32_t ids[64], n, i, len;
      n = l2_encode(t, (const unsigned char *)"hello world", 11, 1, ids, 64);
      for (i = 0; i < n; i++) (void)l2_piece(t, i ? ids[i - 1] : 1, ids[i], &len);
      l2_tokenizer_free(t);
    } else if (!err[0]) abort();
  }
  return 0;
}
