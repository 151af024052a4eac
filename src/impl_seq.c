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
  int32_t *d_pcount;     /* occurrences in the prompt (llama.cpp counts them) */
  void *owned;           /* set by ms_seq_create */
  /* sampler state that lives with the sequence (copied by ms_seq_copy) */
  float mirostat_mu;     /* NaN: not set yet (2 * tau at first use) */
  /* the reasoning budget: configured by ms_seq_reset, driven by accept */
  int32_t bud_tokens;    /* -1 = off */
  int32_t bud_n_start, bud_n_end;
  int32_t bud_start[MS_BUDGET_MAX_IDS], bud_end[MS_BUDGET_MAX_IDS];
  int32_t bud_state;     /* ms_budget_state */
  int32_t bud_remaining; /* COUNTING: tokens left */
  int32_t bud_match_start, bud_match_end; /* matched prefix lengths */
  int32_t bud_force_pos; /* FORCING: next index into bud_end */
};

MS__PRIVATE uint32_t ms__seq_slots(int32_t capacity) {
  uint32_t s = 16;
  while (s < 2u * (uint32_t)capacity) s <<= 1;
  return s;
}

MSDEF size_t ms_seq_size(int32_t capacity) {
  size_t slots, s;
  if (capacity < 1 || capacity > (1 << 28)) return 0;
  slots = ms__seq_slots(capacity);
  /* 0 too when it does not fit in a size_t (32-bit targets: 2^28 wrapped) */
  s = ms__size_add(ms__align_up(sizeof(ms_seq), 16), 5, (size_t)capacity * 4, 16);
  s = ms__size_add(s, 1, (size_t)capacity, 16);
  return ms__size_add(s, 2, (size_t)slots * 4, 16);
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
  s->d_pcount = (int32_t *)p; p += ms__align_up((size_t)capacity * 4, 16);
  s->d_prompt = (uint8_t *)p; p += ms__align_up((size_t)capacity, 16);
  s->slot_token = (int32_t *)p; p += ms__align_up((size_t)slots * 4, 16);
  s->slot_index = (int32_t *)p;
  memset(s->slot_token, 0xff, (size_t)slots * 4);
  s->mirostat_mu = NAN;
  s->bud_tokens = -1;
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
  s->mirostat_mu = NAN;
  s->bud_tokens = -1; s->bud_n_start = 0; s->bud_n_end = 0;
  s->bud_state = MS_BUDGET_IDLE; s->bud_remaining = 0;
  s->bud_match_start = 0; s->bud_match_end = 0; s->bud_force_pos = 0;
}

/* Records one token; prompt tokens set the flag, output tokens count. */
MS__PRIVATE void ms__seq_note(ms_seq *s, int32_t token, int is_prompt) {
  uint32_t h = ms__seq_find(s, token);
  int32_t k;
  if (s->slot_token[h] == -1) {
    k = s->n_distinct++;
    s->slot_token[h] = token; s->slot_index[h] = k;
    s->d_token[k] = token; s->d_count[k] = 0; s->d_prompt[k] = 0; s->d_pcount[k] = 0; s->d_slot[k] = (int32_t)h;
  } else k = s->slot_index[h];
  if (is_prompt) { s->d_prompt[k] = 1; s->d_pcount[k]++; } else s->d_count[k]++;
}

/* One step of a sequence matcher: restarts on a mismatch (at 1 when the
   token opens the sequence again), as llama.cpp's reasoning budget does. */
MS__PRIVATE int32_t ms__match_step(const int32_t *sq, int32_t n, int32_t at, int32_t token) {
  if (n <= 0) return 0;
  if (sq[at] == token) return at + 1;
  return sq[0] == token ? 1 : 0;
}

/* The reasoning budget's state machine, driven by every token (prompt
   tokens too: a span opened by the chat template counts). */
MS__PRIVATE void ms__budget_step(ms_seq *s, int32_t token) {
  switch (s->bud_state) {
    case MS_BUDGET_IDLE:
    case MS_BUDGET_DONE: /* a new start sequence re-arms the budget */
      s->bud_match_start = ms__match_step(s->bud_start, s->bud_n_start, s->bud_match_start, token);
      if (s->bud_match_start == s->bud_n_start) {
        s->bud_match_start = 0;
        s->bud_match_end = 0;
        s->bud_remaining = s->bud_tokens;
        s->bud_state = s->bud_tokens > 0 ? MS_BUDGET_COUNTING : MS_BUDGET_FORCING;
        s->bud_force_pos = 0;
      }
      break;
    case MS_BUDGET_COUNTING:
      s->bud_match_end = ms__match_step(s->bud_end, s->bud_n_end, s->bud_match_end, token);
      if (s->bud_match_end == s->bud_n_end) { s->bud_state = MS_BUDGET_DONE; s->bud_match_end = 0; break; }
      if (--s->bud_remaining <= 0) {
        /* a partly written end sequence continues where it stands */
        s->bud_state = MS_BUDGET_FORCING;
        s->bud_force_pos = s->bud_match_end;
      }
      break;
    case MS_BUDGET_FORCING:
      if (token == s->bud_end[s->bud_force_pos]) s->bud_force_pos++;
      else s->bud_force_pos = 0; /* the caller took another token: force from the start */
      if (s->bud_force_pos >= s->bud_n_end) s->bud_state = MS_BUDGET_DONE;
      break;
    default: break;
  }
}

MSDEF ms_result ms_seq_reset(ms_seq *s, const int32_t *prompt, int32_t n_prompt, int32_t vocab,
                             const ms_params *params, uint64_t salt) {
  int32_t i;
  if (!s || (n_prompt > 0 && !prompt)) return MS_ERR_NULL_ARGUMENT;
  ms__seq_clear(s);
  /* the new request's seed even when its prompt is refused, and no
     vocabulary until one is taken: a caller that goes on after the error
     neither draws the previous request's numbers again nor appends to it */
  s->seed = (params && params->has_seed) ? params->seed : ms__fresh_seed_at(salt, (uint64_t)(uintptr_t)s);
  s->vocab = 0;
  if (vocab < 1) return MS_ERR_BAD_VOCAB;
  if (n_prompt < 0 || n_prompt > s->capacity) return MS_ERR_CAPACITY;
  for (i = 0; i < n_prompt; i++)
    if (prompt[i] < 0 || prompt[i] >= vocab) return MS_ERR_TOKEN_OUT_OF_RANGE;
  s->vocab = vocab;
  for (i = 0; i < n_prompt; i++) { s->tokens[i] = prompt[i]; ms__seq_note(s, prompt[i], 1); }
  s->n_prompt = n_prompt;
  if (params && params->budget_tokens >= 0 && params->n_budget_start > 0 && params->n_budget_end > 0 &&
      params->budget_start && params->budget_end) {
    if (params->n_budget_start > MS_BUDGET_MAX_IDS || params->n_budget_end > MS_BUDGET_MAX_IDS) return MS_ERR_CAPACITY;
    for (i = 0; i < params->n_budget_start; i++)
      if (params->budget_start[i] < 0 || params->budget_start[i] >= vocab) return MS_ERR_TOKEN_OUT_OF_RANGE;
    for (i = 0; i < params->n_budget_end; i++)
      if (params->budget_end[i] < 0 || params->budget_end[i] >= vocab) return MS_ERR_TOKEN_OUT_OF_RANGE;
    memcpy(s->bud_start, params->budget_start, (size_t)params->n_budget_start * 4);
    memcpy(s->bud_end, params->budget_end, (size_t)params->n_budget_end * 4);
    s->bud_n_start = params->n_budget_start;
    s->bud_n_end = params->n_budget_end;
    s->bud_tokens = params->budget_tokens;
    for (i = 0; i < n_prompt; i++) ms__budget_step(s, prompt[i]);
  }
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
  if (s->bud_tokens >= 0) ms__budget_step(s, token);
  return MS_OK;
}

MSDEF ms_result ms_seq_accept_output(ms_seq *s, const ms_output *out) {
  ms_result rc;
  if (!s || !out) return MS_ERR_NULL_ARGUMENT;
  rc = ms_seq_accept(s, out->token);
  if (rc == MS_OK && out->mirostat_mu == out->mirostat_mu) s->mirostat_mu = out->mirostat_mu;
  return rc;
}

MSDEF float ms_seq_mirostat_mu(const ms_seq *s) { return s ? s->mirostat_mu : NAN; }
MSDEF void ms_seq_set_mirostat_mu(ms_seq *s, float mu) { if (s) s->mirostat_mu = mu; }
MSDEF ms_budget_state ms_seq_budget_state(const ms_seq *s, int32_t *remaining) {
  if (remaining) *remaining = s && s->bud_state == MS_BUDGET_COUNTING ? s->bud_remaining : 0;
  return s ? (ms_budget_state)s->bud_state : MS_BUDGET_IDLE;
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
  /* the sampler state is per sequence: a fork carries its own copy */
  dst->mirostat_mu = src->mirostat_mu;
  dst->bud_tokens = src->bud_tokens; dst->bud_n_start = src->bud_n_start; dst->bud_n_end = src->bud_n_end;
  memcpy(dst->bud_start, src->bud_start, sizeof dst->bud_start);
  memcpy(dst->bud_end, src->bud_end, sizeof dst->bud_end);
  dst->bud_state = src->bud_state; dst->bud_remaining = src->bud_remaining;
  dst->bud_match_start = src->bud_match_start; dst->bud_match_end = src->bud_match_end;
  dst->bud_force_pos = src->bud_force_pos;
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
