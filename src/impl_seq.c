/* ---- implementation: per-sequence state ---------------------------------- */
/* Distinct tokens live in dense arrays (token, output count, in-prompt
   flag) in first-seen order, found through an open-addressing hash:
   accepting a token is O(1), and applying penalties walks the dense arrays
   sequentially, never the vocabulary or the history. */
struct ms_seq {
  int32_t capacity;
  int32_t vocab;
  int32_t n_prompt, n_output;
  int32_t n_distinct;
  uint32_t slot_mask;
  uint64_t seed, position;
  int32_t *tokens;       /* prompt then output (capacity) */
  int32_t *slot_token;   /* hash: token, -1 = empty */
  int32_t *slot_index;   /* hash: index into the dense arrays */
  int32_t *d_token;      /* dense, first-seen order */
  int32_t *d_count;      /* occurrences in the output */
  int32_t *d_slot;       /* its hash slot (to clear in O(distinct)) */
  uint8_t *d_prompt;     /* 1 = occurs in the prompt */
  void *owned;           /* set by ms_seq_create */
};

MS__PRIVATE uint32_t ms__seq_slots(int32_t capacity) {
  uint32_t s = 16;
  while (s < 2u * (uint32_t)capacity) s <<= 1;
  return s;
}

MSDEF size_t ms_seq_size(int32_t capacity) {
  size_t slots;
  if (capacity < 1 || capacity > (1 << 28)) return 0;
  slots = ms__seq_slots(capacity);
  return ms__align_up(sizeof(ms_seq), 16) + 4 * ms__align_up((size_t)capacity * 4, 16) +
         ms__align_up((size_t)capacity, 16) + 2 * ms__align_up(slots * 4, 16);
}

MSDEF ms_result ms_seq_init(ms_seq **out, int32_t capacity, void *mem, size_t bytes) {
  size_t need = ms_seq_size(capacity);
  char *p = (char *)mem;
  ms_seq *s;
  uint32_t slots;
  if (!out || !mem) return MS_ERR_NULL_ARGUMENT;
  *out = NULL;
  if (!need) return MS_ERR_CAPACITY;
  if (bytes < need) return MS_ERR_WORKSPACE_TOO_SMALL;
  slots = ms__seq_slots(capacity);
  s = (ms_seq *)p; p += ms__align_up(sizeof(ms_seq), 16);
  memset(s, 0, sizeof *s);
  s->capacity = capacity;
  s->slot_mask = slots - 1;
  s->tokens = (int32_t *)p; p += ms__align_up((size_t)capacity * 4, 16);
  s->d_token = (int32_t *)p; p += ms__align_up((size_t)capacity * 4, 16);
  s->d_count = (int32_t *)p; p += ms__align_up((size_t)capacity * 4, 16);
  s->d_slot = (int32_t *)p; p += ms__align_up((size_t)capacity * 4, 16);
  s->d_prompt = (uint8_t *)p; p += ms__align_up((size_t)capacity, 16);
  s->slot_token = (int32_t *)p; p += ms__align_up((size_t)slots * 4, 16);
  s->slot_index = (int32_t *)p;
  memset(s->slot_token, 0xff, (size_t)slots * 4);
  *out = s;
  return MS_OK;
}

MSDEF ms_result ms_seq_create(ms_seq **out, int32_t capacity) {
  size_t need = ms_seq_size(capacity);
  void *mem;
  ms_result rc;
  if (!out) return MS_ERR_NULL_ARGUMENT;
  *out = NULL;
  if (!need) return MS_ERR_CAPACITY;
  mem = MYSAMPLE_MALLOC(need, NULL);
  if (!mem) return MS_ERR_OUT_OF_MEMORY;
  rc = ms_seq_init(out, capacity, mem, need);
  if (rc != MS_OK) { MYSAMPLE_FREE(mem, NULL); return rc; }
  (*out)->owned = mem;
  return MS_OK;
}

MSDEF void ms_seq_destroy(ms_seq *seq) {
  if (seq && seq->owned) MYSAMPLE_FREE(seq->owned, NULL);
}

MS__PRIVATE uint32_t ms__seq_find(const ms_seq *s, int32_t token) {
  uint32_t h = ((uint32_t)token * 2654435761u) & s->slot_mask;
  while (s->slot_token[h] != -1 && s->slot_token[h] != token) h = (h + 1) & s->slot_mask;
  return h;
}

MS__PRIVATE void ms__seq_clear(ms_seq *s) {
  int32_t i;
  /* clear only the used slots: O(distinct), not O(slots) */
  for (i = 0; i < s->n_distinct; i++) s->slot_token[s->d_slot[i]] = -1;
  s->n_distinct = 0; s->n_prompt = 0; s->n_output = 0; s->position = 0;
}

/* Records one token; prompt tokens set the flag, output tokens count. */
MS__PRIVATE void ms__seq_note(ms_seq *s, int32_t token, int is_prompt) {
  uint32_t h = ms__seq_find(s, token);
  int32_t k;
  if (s->slot_token[h] == -1) {
    k = s->n_distinct++;
    s->slot_token[h] = token; s->slot_index[h] = k;
    s->d_token[k] = token; s->d_count[k] = 0; s->d_prompt[k] = 0; s->d_slot[k] = (int32_t)h;
  } else k = s->slot_index[h];
  if (is_prompt) s->d_prompt[k] = 1; else s->d_count[k]++;
}

MSDEF ms_result ms_seq_reset(ms_seq *s, const int32_t *prompt, int32_t n_prompt, int32_t vocab,
                             const ms_params *params, uint64_t salt) {
  int32_t i;
  if (!s || (n_prompt > 0 && !prompt)) return MS_ERR_NULL_ARGUMENT;
  ms__seq_clear(s);
  if (vocab < 1) return MS_ERR_BAD_VOCAB;
  if (n_prompt < 0 || n_prompt > s->capacity) return MS_ERR_CAPACITY;
  for (i = 0; i < n_prompt; i++)
    if (prompt[i] < 0 || prompt[i] >= vocab) return MS_ERR_TOKEN_OUT_OF_RANGE;
  s->vocab = vocab;
  for (i = 0; i < n_prompt; i++) { s->tokens[i] = prompt[i]; ms__seq_note(s, prompt[i], 1); }
  s->n_prompt = n_prompt;
  s->seed = (params && params->has_seed) ? params->seed : ms_fresh_seed(salt ^ (uint64_t)(uintptr_t)s);
  return MS_OK;
}

MSDEF ms_result ms_seq_accept(ms_seq *s, int32_t token) {
  if (!s) return MS_ERR_NULL_ARGUMENT;
  if (token < 0 || token >= s->vocab) return MS_ERR_TOKEN_OUT_OF_RANGE;
  if (s->n_prompt + s->n_output >= s->capacity) return MS_ERR_CAPACITY;
  s->tokens[s->n_prompt + s->n_output] = token;
  s->n_output++;
  ms__seq_note(s, token, 0);
  s->position++;
  return MS_OK;
}

MSDEF ms_result ms_seq_copy(ms_seq *dst, const ms_seq *src) {
  int32_t i, n;
  if (!dst || !src) return MS_ERR_NULL_ARGUMENT;
  if (dst == src) return MS_OK;
  n = src->n_prompt + src->n_output;
  if (dst->capacity < n) return MS_ERR_CAPACITY;
  ms__seq_clear(dst);
  dst->vocab = src->vocab;
  for (i = 0; i < n; i++) { dst->tokens[i] = src->tokens[i]; ms__seq_note(dst, src->tokens[i], i < src->n_prompt); }
  dst->n_prompt = src->n_prompt; dst->n_output = src->n_output;
  dst->seed = src->seed; dst->position = src->position;
  return MS_OK;
}

MSDEF uint64_t ms_seq_seed(const ms_seq *s) { return s ? s->seed : 0; }
MSDEF void ms_seq_set_seed(ms_seq *s, uint64_t seed) { if (s) s->seed = seed; }
MSDEF uint64_t ms_seq_position(const ms_seq *s) { return s ? s->position : 0; }
MSDEF void ms_seq_set_position(ms_seq *s, uint64_t position) { if (s) s->position = position; }
MSDEF int32_t ms_seq_output_len(const ms_seq *s) { return s ? s->n_output : 0; }
MSDEF int32_t ms_seq_prompt_len(const ms_seq *s) { return s ? s->n_prompt : 0; }
MSDEF const int32_t *ms_seq_tokens(const ms_seq *s) { return s ? s->tokens : NULL; }
MSDEF int32_t ms_seq_count(const ms_seq *s, int32_t token) {
  uint32_t h;
  if (!s || token < 0) return 0;
  h = ms__seq_find(s, token);
  return s->slot_token[h] == token ? s->d_count[s->slot_index[h]] : 0;
}
MSDEF int ms_seq_in_prompt(const ms_seq *s, int32_t token) {
  uint32_t h;
  if (!s || token < 0) return 0;
  h = ms__seq_find(s, token);
  return s->slot_token[h] == token ? s->d_prompt[s->slot_index[h]] : 0;
}
