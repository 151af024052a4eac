/* ---- implementation: egress text assembly (UTF-8, stop strings) ---------- */
/* Semantics follow vLLM v1 (vllm/v1/engine/detokenizer.py and
   vllm/v1/core/sched/utils.py check_stop), with two deliberate differences,
   both documented in docs/EGRESS.md:
   - vLLM takes the first stop string *in list order* that occurs; we take
     the match that completes first in the text (ties: the longer one). That
     makes the result independent of how the text was split into tokens.
   - An incomplete UTF-8 sequence left at finish becomes U+FFFD (vLLM's
     incremental detokenizer drops it); invalid bytes are never dropped. */

MSDEF const char *ms_finish_name(ms_finish f) {
  switch (f) {
    case MS_FINISH_STOP: return "stop";
    case MS_FINISH_LENGTH: return "length";
    case MS_FINISH_ABORT: return "abort";
    case MS_FINISH_CONTENT_FILTER: return "content_filter";
    case MS_FINISH_TOOL_CALLS: return "tool_calls";
    default: return NULL;
  }
}

/* ---- UTF-8 ---------------------------------------------------------------- */
/* The decoder state is the bytes of an incomplete sequence (at most 3); the
   expected length and the range allowed for the next byte are derived from
   them, so the state can be copied and replayed (pushes are atomic). */
typedef struct ms__u8 {
  unsigned char seq[4];
  int n;      /* bytes in seq */
  int need;   /* continuation bytes still expected */
  unsigned char lo, hi; /* allowed range of the next byte (Unicode table 3-7) */
} ms__u8;

/* Starts a sequence with lead byte b; returns 0 when b cannot start one. */
MS__PRIVATE int ms__u8_lead(ms__u8 *d, unsigned char b) {
  d->lo = 0x80; d->hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) d->need = 1;
  else if (b >= 0xE0 && b <= 0xEF) {
    d->need = 2;
    if (b == 0xE0) d->lo = 0xA0;       /* no overlongs */
    else if (b == 0xED) d->hi = 0x9F;  /* no surrogates */
  } else if (b >= 0xF0 && b <= 0xF4) {
    d->need = 3;
    if (b == 0xF0) d->lo = 0x90;       /* no overlongs */
    else if (b == 0xF4) d->hi = 0x8F;  /* <= U+10FFFF */
  } else return 0;
  d->seq[0] = b; d->n = 1;
  return 1;
}

MS__PRIVATE char *ms__put_fffd(char *o) {
  o[0] = (char)0xEF; o[1] = (char)0xBF; o[2] = (char)0xBD;
  return o + 3;
}

/* Decodes in[0..n) after the state's pending bytes into dst (room for
   3 * n bytes is enough); returns the end of the output. */
MS__PRIVATE char *ms__u8_feed(ms__u8 *d, const unsigned char *in, size_t n, char *o) {
  size_t i = 0;
  while (i < n) {
    unsigned char b = in[i];
    if (d->n == 0) {
      if (b < 0x80) {           /* ASCII run: the common case */
        size_t j = i + 1;
        while (j < n && in[j] < 0x80) j++;
        memcpy(o, in + i, j - i); o += j - i; i = j;
        continue;
      }
      if (!ms__u8_lead(d, b)) o = ms__put_fffd(o);
      i++;
      continue;
    }
    if (b >= d->lo && b <= d->hi) {
      d->seq[d->n++] = b; d->lo = 0x80; d->hi = 0xBF; i++;
      if (--d->need == 0) { memcpy(o, d->seq, (size_t)d->n); o += d->n; d->n = 0; }
    } else {
      /* The maximal subpart so far becomes one U+FFFD; b starts afresh. */
      o = ms__put_fffd(o); d->n = 0;
    }
  }
  return o;
}

MS__PRIVATE char *ms__u8_flush(ms__u8 *d, char *o) {
  if (d->n) { o = ms__put_fffd(o); d->n = 0; }
  return o;
}

MS__PRIVATE size_t ms__u8_count_chars(const char *s, size_t n) {
  size_t i, c = 0;
  for (i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
  return c;
}

MSDEF ms_result ms_utf8_validate(const void *bytes, size_t n) {
  const unsigned char *s = (const unsigned char *)bytes;
  size_t i = 0;
  ms__u8 d;
  if (!s && n) return MS_ERR_NULL_ARGUMENT;
  d.n = 0;
  while (i < n) {
    unsigned char b = s[i];
    if (b < 0x80) { i++; continue; }
    if (!ms__u8_lead(&d, b)) return MS_ERR_INVALID_UTF8;
    i++;
    while (d.need) {
      if (i >= n || s[i] < d.lo || s[i] > d.hi) return MS_ERR_INVALID_UTF8;
      d.lo = 0x80; d.hi = 0xBF; d.need--; i++;
    }
  }
  return MS_OK;
}

MSDEF size_t ms_utf8_sanitize(const void *bytes, size_t n, char *out, size_t out_size) {
  /* Decode in slices through a stack buffer so out may be short or NULL. */
  const unsigned char *s = (const unsigned char *)bytes;
  char tmp[3 * 256 + 8];
  size_t total = 0, i = 0;
  ms__u8 d;
  if (!s) return 0;
  d.n = 0;
  for (;;) {
    size_t k = n - i < 256 ? n - i : 256;
    char *e = ms__u8_feed(&d, s + i, k, tmp);
    size_t m;
    i += k;
    if (i == n) e = ms__u8_flush(&d, e);
    m = (size_t)(e - tmp);
    if (out && total < out_size) memcpy(out + total, tmp, m < out_size - total ? m : out_size - total);
    total += m;
    if (i == n) break;
  }
  return total;
}

/* ---- the per-sequence state ------------------------------------------------ */
struct ms_text {
  /* capacities (from the desc) */
  int32_t cap_stops, cap_stop_bytes, cap_stop_ids;
  size_t cap_text, tail_cap;
  /* regions in the caller's memory */
  uint32_t *stop_len;    /* bytes */
  int32_t *stop_chars;   /* code points */
  int32_t *stop_ids;
  char *stop_mem;        /* stop i at stop_mem + i * cap_stop_bytes */
  char *tail;            /* the last hold_chars characters of the text */
  char *text;            /* kept emitted text (cap_text + 1 bytes) */
  /* the request */
  int32_t n_stop, n_stop_ids, eos, ignore_eos, include, min_tokens, max_tokens;
  ms_holdback holdback;
  int32_t hold_chars;    /* max(len(stop)) - 1 in characters, 0 without stops */
  /* the sequence */
  int32_t n_tokens;
  ms_finish finish;
  ms_stop_reason reason;
  ms__u8 dec;
  size_t tail_len;       /* bytes in tail */
  size_t held;           /* bytes at the end of tail not emitted yet */
  int64_t chars, bytes;  /* decoded so far, before any truncation */
  size_t text_len;
};

MSDEF ms_text_params ms_text_params_default(void) {
  ms_text_params p;
  memset(&p, 0, sizeof p);
  p.eos_token_id = -1;
  p.holdback = MS_HOLDBACK_VLLM;
  return p;
}

#define MS__TEXT_LIMIT (1 << 24)

MS__PRIVATE int ms__text_desc_ok(const ms_text_desc *d) {
  if (!d) return 0;
  if (d->max_stops < 0 || d->max_stops > MS__TEXT_LIMIT) return 0;
  if (d->max_stop_bytes < 0 || d->max_stop_bytes > MS__TEXT_LIMIT) return 0;
  if (d->max_stops > 0 && d->max_stop_bytes < 1) return 0;
  if (d->max_stop_ids < 0 || d->max_stop_ids > MS__TEXT_LIMIT) return 0;
  if (d->text_capacity > ((size_t)-1) / 4) return 0;
  if ((double)d->max_stops * (double)d->max_stop_bytes > (double)(((size_t)-1) / 4)) return 0;
  return 1;
}

/* Offsets of the regions, 8-byte aligned; returns the total. */
MS__PRIVATE size_t ms__text_layout(const ms_text_desc *d, size_t off[6]) {
  size_t o = ms__align_up(sizeof(struct ms_text), 8);
  size_t stops = (size_t)d->max_stops, sb = (size_t)d->max_stop_bytes;
  off[0] = o; o = ms__align_up(o + stops * sizeof(uint32_t), 8);       /* stop_len */
  off[1] = o; o = ms__align_up(o + stops * sizeof(int32_t), 8);        /* stop_chars */
  off[2] = o; o = ms__align_up(o + (size_t)d->max_stop_ids * sizeof(int32_t), 8);
  off[3] = o; o = ms__align_up(o + stops * sb, 8);                     /* stop_mem */
  off[4] = o; o = ms__align_up(o + 4 * sb + 4, 8);                     /* tail */
  off[5] = o; o = ms__align_up(o + d->text_capacity + 1, 8);           /* text */
  return o;
}

MSDEF size_t ms_text_size(const ms_text_desc *desc) {
  size_t off[6];
  if (!ms__text_desc_ok(desc)) return 0;
  return ms__text_layout(desc, off);
}

MS__PRIVATE void ms__text_clear(ms_text *t) {
  t->n_stop = 0; t->n_stop_ids = 0; t->eos = -1; t->ignore_eos = 0; t->include = 0;
  t->min_tokens = 0; t->max_tokens = 0; t->holdback = MS_HOLDBACK_VLLM; t->hold_chars = 0;
  t->n_tokens = 0; t->finish = MS_FINISH_NONE;
  memset(&t->reason, 0, sizeof t->reason);
  t->dec.n = 0; t->tail_len = 0; t->held = 0; t->chars = 0; t->bytes = 0;
  t->text_len = 0; t->text[0] = 0;
}

MSDEF ms_result ms_text_init(ms_text **out, const ms_text_desc *desc, void *mem, size_t bytes) {
  size_t off[6], need;
  ms_text *t;
  char *m = (char *)mem;
  if (!out || !desc || !mem) return MS_ERR_NULL_ARGUMENT;
  *out = NULL;
  if (!ms__text_desc_ok(desc)) return MS_ERR_INVALID_PARAM;
  need = ms__text_layout(desc, off);
  if (bytes < need) return MS_ERR_WORKSPACE_TOO_SMALL;
  if (((uintptr_t)mem & 7u) != 0) return MS_ERR_INVALID_PARAM;
  t = (ms_text *)mem;
  memset(t, 0, sizeof *t);
  t->cap_stops = desc->max_stops; t->cap_stop_bytes = desc->max_stop_bytes;
  t->cap_stop_ids = desc->max_stop_ids; t->cap_text = desc->text_capacity;
  t->tail_cap = 4 * (size_t)desc->max_stop_bytes + 4;
  t->stop_len = (uint32_t *)(void *)(m + off[0]);
  t->stop_chars = (int32_t *)(void *)(m + off[1]);
  t->stop_ids = (int32_t *)(void *)(m + off[2]);
  t->stop_mem = m + off[3];
  t->tail = m + off[4];
  t->text = m + off[5];
  ms__text_clear(t);
  *out = t;
  return MS_OK;
}

MSDEF ms_result ms_text_reset(ms_text *t, const ms_text_params *params, char *msg, size_t msg_size) {
  ms_text_params def;
  const ms_text_params *p = params;
  int32_t i, maxc = 0;
  if (msg && msg_size) msg[0] = 0;
  if (!t) return MS_ERR_NULL_ARGUMENT;
  ms__text_clear(t);
  if (!p) { def = ms_text_params_default(); p = &def; }
  if (p->n_stop < 0 || p->n_stop_token_ids < 0) {
    ms__msg(msg, msg_size, "n_stop and n_stop_token_ids must be >= 0");
    return MS_ERR_INVALID_PARAM;
  }
  if ((p->n_stop > 0 && !p->stop) || (p->n_stop_token_ids > 0 && !p->stop_token_ids)) {
    ms__msg(msg, msg_size, "stop or stop_token_ids is NULL with a non-zero count");
    return MS_ERR_NULL_ARGUMENT;
  }
  if (p->min_tokens < 0) {
    ms__msg(msg, msg_size, "min_tokens must be greater than or equal to 0, got %d.", (int)p->min_tokens);
    return MS_ERR_INVALID_PARAM;
  }
  if (p->max_tokens < 0) {
    ms__msg(msg, msg_size, "max_tokens must be at least 1, got %d.", (int)p->max_tokens);
    return MS_ERR_INVALID_PARAM;
  }
  if (p->max_tokens > 0 && p->min_tokens > p->max_tokens) {
    ms__msg(msg, msg_size, "min_tokens must be less than or equal to max_tokens=%d, got %d.",
            (int)p->max_tokens, (int)p->min_tokens);
    return MS_ERR_INVALID_PARAM;
  }
  if (p->holdback != MS_HOLDBACK_VLLM && p->holdback != MS_HOLDBACK_PREFIX) {
    ms__msg(msg, msg_size, "holdback must be MS_HOLDBACK_VLLM or MS_HOLDBACK_PREFIX");
    return MS_ERR_INVALID_PARAM;
  }
  if (p->n_stop > t->cap_stops) {
    ms__msg(msg, msg_size, "%d stop strings given, this ms_text holds at most %d", (int)p->n_stop, (int)t->cap_stops);
    return MS_ERR_CAPACITY;
  }
  if (p->n_stop_token_ids > t->cap_stop_ids) {
    ms__msg(msg, msg_size, "%d stop_token_ids given, this ms_text holds at most %d",
            (int)p->n_stop_token_ids, (int)t->cap_stop_ids);
    return MS_ERR_CAPACITY;
  }
  for (i = 0; i < p->n_stop; i++) {
    const char *s = p->stop[i];
    size_t len;
    if (!s) { ms__msg(msg, msg_size, "stop[%d] is NULL", (int)i); return MS_ERR_NULL_ARGUMENT; }
    len = p->stop_lens ? p->stop_lens[i] : strlen(s);
    if (len == 0) { ms__msg(msg, msg_size, "stop cannot contain an empty string."); return MS_ERR_INVALID_PARAM; }
    if (len > (size_t)t->cap_stop_bytes) {
      ms__msg(msg, msg_size, "stop[%d] is %lu bytes long, this ms_text holds at most %d",
              (int)i, (unsigned long)len, (int)t->cap_stop_bytes);
      return MS_ERR_CAPACITY;
    }
    if (ms_utf8_validate(s, len) != MS_OK) {
      ms__msg(msg, msg_size, "stop[%d] is not valid UTF-8", (int)i);
      return MS_ERR_INVALID_UTF8;
    }
  }
  /* All checks passed: copy. */
  for (i = 0; i < p->n_stop; i++) {
    size_t len = p->stop_lens ? p->stop_lens[i] : strlen(p->stop[i]);
    memcpy(t->stop_mem + (size_t)i * (size_t)t->cap_stop_bytes, p->stop[i], len);
    t->stop_len[i] = (uint32_t)len;
    t->stop_chars[i] = (int32_t)ms__u8_count_chars(p->stop[i], len);
    if (t->stop_chars[i] > maxc) maxc = t->stop_chars[i];
  }
  if (p->n_stop_token_ids) memcpy(t->stop_ids, p->stop_token_ids, (size_t)p->n_stop_token_ids * sizeof(int32_t));
  t->n_stop = p->n_stop; t->n_stop_ids = p->n_stop_token_ids;
  t->eos = p->eos_token_id; t->ignore_eos = p->ignore_eos != 0;
  t->include = p->include_stop_str_in_output != 0;
  t->min_tokens = p->min_tokens; t->max_tokens = p->max_tokens;
  t->holdback = p->holdback;
  t->hold_chars = maxc > 0 ? maxc - 1 : 0;
  return MS_OK;
}

MSDEF size_t ms_text_out_bound(const ms_text *t, size_t n_bytes) {
  /* The tail holds hold_chars characters of at most 4 bytes each. */
  size_t tail = t ? 4 * (size_t)t->hold_chars : 0;
  if (n_bytes > (((size_t)-1) - tail - 64) / 3 - 3) return (size_t)-1;
  return tail + 3 * (n_bytes + 3) + 1;
}

MSDEF const char *ms_text_get(const ms_text *t, size_t *len) {
  if (len) *len = t ? t->text_len : 0;
  return t ? t->text : "";
}
MSDEF ms_finish ms_text_finished(const ms_text *t) { return t ? t->finish : MS_FINISH_NONE; }
MSDEF int32_t ms_text_n_tokens(const ms_text *t) { return t ? t->n_tokens : 0; }

/* Byte length of the last `chars` characters of s[0..n) (all of it when it
   has fewer). */
MS__PRIVATE size_t ms__tail_bytes(const char *s, size_t n, int32_t chars) {
  size_t i = n;
  int32_t c = 0;
  if (chars <= 0) return 0;
  while (i > 0) {
    i--;
    if (((unsigned char)s[i] & 0xC0) != 0x80 && ++c == chars) break;
  }
  return n - i;
}

/* The earliest-completing stop string match that ends after `from` in
   s[0..n); ties go to the longer string. Returns its index or -1 and its
   start and end through *mstart and *mend. */
MS__PRIVATE int32_t ms__find_stop(const ms_text *t, const char *s, size_t n, size_t from,
                                  size_t *mstart, size_t *mend) {
  int32_t i, best = -1;
  size_t best_end = 0, best_len = 0;
  for (i = 0; i < t->n_stop; i++) {
    const char *st = t->stop_mem + (size_t)i * (size_t)t->cap_stop_bytes;
    size_t len = t->stop_len[i], pos, last;
    if (len > n) continue;
    pos = from + 1 >= len ? from + 1 - len : 0;   /* first start whose end is > from */
    last = n - len;                               /* last possible start */
    while (pos <= last) {
      const char *hit = (const char *)memchr(s + pos, (unsigned char)st[0], last - pos + 1);
      size_t h, end;
      if (!hit) break;
      h = (size_t)(hit - s);
      if (memcmp(hit, st, len) == 0) {
        end = h + len;
        if (best < 0 || end < best_end || (end == best_end && len > best_len)) {
          best = i; best_end = end; best_len = len;
        }
        break;   /* later occurrences of this string end later */
      }
      pos = h + 1;
    }
  }
  if (best >= 0) { *mend = best_end; *mstart = best_end - best_len; }
  return best;
}

/* MS_HOLDBACK_PREFIX: the longest tail of s[0..n) that is a proper prefix of
   some stop string. */
MS__PRIVATE size_t ms__prefix_hold(const ms_text *t, const char *s, size_t n) {
  size_t best = 0;
  int32_t i;
  for (i = 0; i < t->n_stop; i++) {
    const char *st = t->stop_mem + (size_t)i * (size_t)t->cap_stop_bytes;
    size_t k = t->stop_len[i] - 1;
    if (k > n) k = n;
    for (; k > best; k--)
      if (s[n - k] == st[0] && memcmp(s + n - k, st, k) == 0) { best = k; break; }
  }
  return best;
}

/* The shared body of ms_text_push (has_token = 1) and ms_text_finish. */
MS__PRIVATE ms_result ms__text_step(ms_text *t, int has_token, int32_t token, const unsigned char *in,
                                    size_t n, ms_finish forced, char *out, size_t out_size,
                                    ms_text_step *step) {
  ms__u8 dec;
  int32_t c = t->n_tokens + (has_token ? 1 : 0), i, si;
  int by_token = 0, length = 0, use_text = 1, finishing = 0, check;
  ms_finish finish = MS_FINISH_NONE;
  ms_stop_reason reason;
  size_t pos, new_start, new_bytes, new_chars, emit_start, cut, tail_bytes, mstart = 0, mend = 0;
  char *e;

  memset(step, 0, sizeof *step);
  step->delta = out;
  /* On every error step->delta is "" (out holds only scratch otherwise). */
  if (t->finish != MS_FINISH_NONE) { if (out_size) out[0] = 0; return MS_ERR_STATE; }
  if (out_size < ms_text_out_bound(t, n)) { if (out_size) out[0] = 0; return MS_ERR_BUFFER_TOO_SMALL; }
  memset(&reason, 0, sizeof reason);

  if (has_token) {
    /* vLLM check_stop: nothing stops before min_tokens; EOS, then stop ids,
       then the length cap. */
    if (c >= t->min_tokens) {
      if (!t->ignore_eos && t->eos >= 0 && token == t->eos) by_token = 1;
      for (i = 0; !by_token && i < t->n_stop_ids; i++)
        if (t->stop_ids[i] == token) {
          by_token = 1; reason.kind = MS_STOP_TOKEN; reason.token = token; reason.index = -1;
        }
    }
    if (by_token) finish = MS_FINISH_STOP;
    else if (t->max_tokens > 0 && c >= t->max_tokens) { length = 1; finish = MS_FINISH_LENGTH; }
    use_text = !(by_token && !t->include);
    finishing = by_token || length;
  } else {
    finish = forced; finishing = 1;
  }

  /* Work in out: [tail | newly decoded text]. */
  memcpy(out, t->tail, t->tail_len);
  new_start = t->tail_len;
  dec = t->dec;
  e = out + new_start;
  if (use_text && n) e = ms__u8_feed(&dec, in, n, e);
  if (finishing) e = ms__u8_flush(&dec, e);
  pos = (size_t)(e - out);
  new_bytes = pos - new_start;
  new_chars = ms__u8_count_chars(out + new_start, new_bytes);

  /* Stop strings: only text from tokens after the first min_tokens. */
  check = t->n_stop > 0 && new_bytes > 0 && c > t->min_tokens;
  si = check ? ms__find_stop(t, out, pos, new_start, &mstart, &mend) : -1;
  emit_start = t->tail_len - t->held;
  if (si >= 0) {
    finish = MS_FINISH_STOP; finishing = 1;
    reason.kind = MS_STOP_STRING; reason.index = si; reason.token = -1;
    reason.str = t->stop_mem + (size_t)si * (size_t)t->cap_stop_bytes;
    reason.len = t->stop_len[si];
    cut = t->include ? mend : mstart;
  } else if (finishing) {
    cut = pos;
  } else if (t->n_stop == 0 || t->include) {
    cut = pos;
  } else if (t->holdback == MS_HOLDBACK_PREFIX) {
    cut = pos - ms__prefix_hold(t, out, pos);
  } else {
    cut = pos - ms__tail_bytes(out, pos, t->hold_chars);
  }
  /* Never take back what was emitted (cannot happen by construction: a
     match always starts inside the held text). */
  if (cut < emit_start) cut = emit_start;
  MYSAMPLE_ASSERT(cut <= pos);

  if (t->cap_text && t->text_len + (cut - emit_start) > t->cap_text) { out[0] = 0; return MS_ERR_CAPACITY; }

  /* Commit. */
  tail_bytes = finishing ? 0 : ms__tail_bytes(out, pos, t->hold_chars);
  if (tail_bytes > t->tail_cap) tail_bytes = t->tail_cap;   /* defensive; cannot exceed */
  memcpy(t->tail, out + pos - tail_bytes, tail_bytes);
  t->held = finishing ? 0 : pos - cut;
  if (t->held > tail_bytes) t->held = tail_bytes;
  t->tail_len = tail_bytes;
  t->dec = dec;
  step->text_offset = t->chars;
  step->text_offset_bytes = t->bytes;
  t->chars += (int64_t)new_chars;
  t->bytes += (int64_t)new_bytes;
  if (has_token) t->n_tokens = c;
  memmove(out, out + emit_start, cut - emit_start);
  out[cut - emit_start] = 0;
  step->delta = out;
  step->delta_len = cut - emit_start;
  if (t->cap_text) {
    memcpy(t->text + t->text_len, out, step->delta_len);
    t->text_len += step->delta_len;
    t->text[t->text_len] = 0;
  }
  if (finishing) { t->finish = finish; t->reason = reason; }
  step->finish = finishing ? finish : MS_FINISH_NONE;
  step->stop_reason = reason;
  step->n_tokens = t->n_tokens;
  step->token_text_used = has_token && use_text;
  return MS_OK;
}

MSDEF ms_result ms_text_push(ms_text *t, int32_t token, const void *bytes, size_t n_bytes,
                             char *out, size_t out_size, ms_text_step *step) {
  if (!t || !out || !step || (!bytes && n_bytes)) return MS_ERR_NULL_ARGUMENT;
  return ms__text_step(t, 1, token, (const unsigned char *)bytes, n_bytes, MS_FINISH_NONE,
                       out, out_size, step);
}

MSDEF ms_result ms_text_finish(ms_text *t, ms_finish reason, char *out, size_t out_size,
                               ms_text_step *step) {
  if (!t || !out || !step) return MS_ERR_NULL_ARGUMENT;
  if (reason <= MS_FINISH_NONE || reason >= MS__FINISH_COUNT_) return MS_ERR_INVALID_PARAM;
  return ms__text_step(t, 0, -1, NULL, 0, reason, out, out_size, step);
}
