/* ---- implementation: compiling with NVRTC, memory and disk caches ---------- */

/* The kernels (extern "C" names in kernels.cu) and the NVRTC program
   ("unit") each is compiled in: kernels.cu guards every kernel with
   MS_IN_UNIT(u), and program u gets -DMS_UNIT=u. The units compile in
   parallel threads, so a cold compile takes about as long as the largest
   unit (one program took the sum: 1.4 s against 0.8 s on 2 cores). The
   kernels the figures run (ms_k_stats, ms_k_pass, ms_k_sums, ms_k_tail)
   have a program each, and so do ms_k_row and ms_k_lp; ms_k_pass and
   ms_k_sums were one kernel, which alone took 1.7-1.85 s against
   0.9-1.05 and 0.7 apart (one core of the 2-core development machine,
   session 19); ms_k_row with the logprobs (ms_k_lp's part) 1.07 s
   against 0.70 and 0.42, and ms_k_tail in the small program 1.06 s
   against 0.79 and 0.47 (session 25). A build with top_p's bins
   (-DMS_TOPP_BINS=1) adds three programs, one for each of the bins'
   kernels: inside ms_k_stats, ms_k_sums and ms_k_pass they made those
   programs compile in 2.0-2.3, 1.65 and 1.15 s (session 27). */
static const char *const ms__cu_kernel_names[] = {
  "ms_k_mask", "ms_k_stats", "ms_k_pass", "ms_k_row", "ms_k_seq_prompt", "ms_k_seq_accept", "ms_k_ties", "ms_k_list",
  "ms_k_eps", "ms_k_sums", "ms_k_tail", "ms_k_lp", "ms_k_pbstats", "ms_k_pgather", "ms_k_pbin", NULL
};
static const int ms__cu_kernel_unit[] = { 3, 2, 1, 0, 3, 3, 3, 5, 3, 4, 6, 7, 8, 9, 10 };
#define MS__CU_UNITS 11       /* programs: 0-7 in every build, 8-10 only with top_p's bins */
#define MS__CU_BASE_UNITS 8
/* The programs of a build (the bins' three only where asked for). */
static int ms__cu_n_units(int topp_bins) { return topp_bins ? MS__CU_UNITS : MS__CU_BASE_UNITS; }
/* The programs of kernels that run on lists or on rows that need them,
   never in the figures (3: masks, sequences, ties, HF's epsilon
   and eta; 5: llama.cpp's list), and ms_k_tail's (6), whose work on a
   row is small: NVRTC's fast compile (12.8 and newer)
   took the small program from 0.68 s to 0.44 s alone (nvcc as a
   stand-in), and the four programs on 2 cores from about 1.0 s to 0.8. */
#define MS__CU_FAST_DEFAULT ((1u << 3) | (1u << 5) | (1u << 6))
/* $MYSAMPLE_CUDA_FAST_UNITS: which programs get the fast compile instead,
   a list of program numbers ("2,3,5,6"), "all" or "none"; to time on a
   GPU what the fast compile costs each program the figures run
   (tools/gpu_ab.sh), since the largest of those bounds the cold compile.
   Returns the set as bits, or -1 for a value that is none of these. */
static long ms__cu_fast_units(void) {
  const char *e = ms__cu_getenv("MYSAMPLE_CUDA_FAST_UNITS");
  long m = 0;
  if (!e || !*e) return (long)MS__CU_FAST_DEFAULT;
  if (!strcmp(e, "all")) return (1L << MS__CU_UNITS) - 1;
  if (!strcmp(e, "none")) return 0;
  for (;;) {
    int u;
    if (*e < '0' || *e > '9') return -1;
    u = *e++ - '0';
    if (u == 1 && *e == '0') { u = 10; e++; }   /* (10: the last program; no other number has two digits) */
    m |= 1L << u;
    if (!*e) return m;
    if (*e++ != ',') return -1;
  }
}
/* $MYSAMPLE_CUDA_FAST_LEVEL: the fast compile's option, min (default),
   mid or max (NVRTC's --Ofast-compile levels: max compiled each program
   in 0.3-0.65 s alone where min took 0.5-1.1, session 26); NULL for
   another value. */
static const char *ms__cu_fast_level(void) {
  const char *e = ms__cu_getenv("MYSAMPLE_CUDA_FAST_LEVEL");
  if (!e || !*e || !strcmp(e, "min")) return "--Ofast-compile=min";
  if (!strcmp(e, "mid")) return "--Ofast-compile=mid";
  if (!strcmp(e, "max")) return "--Ofast-compile=max";
  return NULL;
}
static int ms__cu_unit_fast_ok(const char *const *opts, int n_opts, int rtc_major, int rtc_minor, long fast, int u) {
  int i;
  if (fast < 0 || !((fast >> u) & 1) || rtc_major < 12 || (rtc_major == 12 && rtc_minor < 8)) return 0;
  for (i = 0; i < n_opts; i++) if (!strncmp(opts[i], "--Ofast-compile", 15)) return 0;   /* the caller chose one */
  return 1;
}
enum { MS__K_MASK, MS__K_STATS, MS__K_PASS, MS__K_ROW, MS__K_SEQ_PROMPT, MS__K_SEQ_ACCEPT, MS__K_TIES, MS__K_LIST, MS__K_EPS,
       MS__K_SUMS, MS__K_TAIL, MS__K_LP, MS__K_PBSTATS, MS__K_PGATHER, MS__K_PBIN, MS__K_COUNT_ };
/* the tables agree: a name and a program per kernel, every kernel fits ms_cuda_compile_info */
typedef char ms__cu_check_names[(sizeof ms__cu_kernel_names / sizeof ms__cu_kernel_names[0] == MS__K_COUNT_ + 1) ? 1 : -1];
typedef char ms__cu_check_units[(sizeof ms__cu_kernel_unit / sizeof ms__cu_kernel_unit[0] == MS__K_COUNT_) ? 1 : -1];
typedef char ms__cu_check_info[(MS__K_COUNT_ <= MS_CUDA_MAX_KERNELS) ? 1 : -1];

/* NVRTC options besides the target: fixed, and part of the cache key. */
static const char *const ms__cu_opts[] = { "-std=c++14", NULL };
/* No -split-compile: it saved ~13% of a cold compile on 2 cores, but with
   it (NVRTC's worker threads) the ASan test binary began exiting non-zero
   on CI with no report; one thread per compile is the safe default. */

/* $MYSAMPLE_CUDA_NVRTC_OPTIONS: up to 6 more NVRTC options (at most
   min(6, room)), split at spaces, 255 characters in all (e.g.
   "--Ofast-compile=min" to trade run time for a faster cold compile).
   They join the cache key like the fixed ones. Caller holds
   ms__cu_compile_mu (the split copy is static). Returns how many, or -1
   for a value with more options or characters than that (refused, not
   cut: a cut once turned -DMS_L2PF=32 into -DMS_L2PF=3). */
#define MS__CU_EXTRA_OPTS 6
static int ms__cu_extra_opts(const char **opts, int room) {
  static char buf[256];
  const char *e = ms__cu_getenv("MYSAMPLE_CUDA_NVRTC_OPTIONS");
  const int most = room < MS__CU_EXTRA_OPTS ? room : MS__CU_EXTRA_OPTS;
  char *p;
  int n = 0;
  if (!e || !*e) return 0;
  if (strlen(e) >= sizeof buf) return -1;
  memcpy(buf, e, strlen(e) + 1);
  for (p = buf; *p;) {
    while (*p == ' ') p++;
    if (!*p) break;
    if (n == most) return -1;
    opts[n++] = p;
    while (*p && *p != ' ') p++;
    if (*p) *p++ = 0;   /* ends this option here (the last one read too) */
  }
  return n;
}

/* The compiled units of one key, held for the life of the process: unit
   u's binary (a CUBIN, or PTX with its NUL) at data + off[u]. */
typedef struct ms__cu_bin {
  struct ms__cu_bin *next;
  char key[256];
  char target[24];
  int is_ptx;
  int n_units;   /* the build's programs (ms__cu_n_units); len 0 for the others */
  size_t size;   /* of data, the units 16-byte aligned */
  char *data;
  size_t off[MS__CU_UNITS], len[MS__CU_UNITS];
} ms__cu_bin;

static ms__cu_mutex ms__cu_compile_mu = MS__CU_MUTEX_INIT;
static ms__cu_bin *ms__cu_bins;      /* the in-memory cache (guarded by ms__cu_compile_mu) */
static char *ms__cu_source;          /* the joined kernel source */
static unsigned long long ms__cu_source_hash;

static unsigned long long ms__cu_fnv(const void *p, size_t n, unsigned long long h) {
  const unsigned char *b = (const unsigned char *)p;
  size_t i;
  for (i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ULL; }
  return h;
}
#define MS__CU_FNV0 14695981039346656037ULL
/* The cache file's check of its units: FNV-1a's step over 8-byte words
   (a disk hit hashes ~0.6 MB; a byte at a time took about 0.5 ms). */
static unsigned long long ms__cu_hash64(const char *p, size_t n, unsigned long long h) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    unsigned long long w;
    memcpy(&w, p + i, 8);
    h = (h ^ w) * 1099511628211ULL;
  }
  return ms__cu_fnv(p + i, n - i, h);
}

/* Joins the embedded chunks once (under ms__cu_compile_mu). */
static const char *ms__cu_get_source(void) {
  size_t n = 0, i;
  char *s;
  if (ms__cu_source) return ms__cu_source;
  for (i = 0; ms__cuda_src_kernels[i]; i++) n += strlen(ms__cuda_src_kernels[i]);
  s = (char *)MS__CU_MALLOC(n + 1);
  if (!s) return NULL;
  n = 0;
  for (i = 0; ms__cuda_src_kernels[i]; i++) {
    size_t l = strlen(ms__cuda_src_kernels[i]);
    memcpy(s + n, ms__cuda_src_kernels[i], l);
    n += l;
  }
  s[n] = 0;
  ms__cu_source_hash = ms__cu_fnv(s, n, MS__CU_FNV0);
  ms__cu_source = s;
  return s;
}

/* -- the disk cache ------------------------------------------------------------
   One file per key, <dir>/cuda-<16 hex of the key hash>.bin: a header line
   "mysample-cuda-cache 4 <key> <size of unit 0> ... <size of the build's
   last unit> <16 hex: ms__cu_hash64 of the units>\n" then the units'
   binaries back to back (n_units of them: the key says which build, so the
   reader knows how many). Written to a temporary name of its own (created
   exclusively: never through a link another user planted) and renamed, so
   readers never see half a file; a file whose units do not hash to its
   header's value (a torn write, bit rot) is ignored and rewritten, never
   handed to the driver. */

static int ms__cu_mkdir_p(const char *dir) {
  char buf[512];
  size_t n = strlen(dir), i;
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, dir, n + 1);
  for (i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == '\\' || buf[i] == 0) {
      char c = buf[i];
      buf[i] = 0;
#ifdef _WIN32
      if (!(i == 2 && buf[1] == ':')) _mkdir(buf);
#else
      mkdir(buf, 0755);
#endif
      buf[i] = c;
    }
  }
  {
#ifdef _WIN32
    DWORD a = GetFileAttributesA(dir);
    return (a != INVALID_FILE_ATTRIBUTES && (a & FILE_ATTRIBUTE_DIRECTORY)) ? 0 : -1;
#else
    struct stat st;
    return (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) ? 0 : -1;
#endif
  }
}

/* Is the whole of snprintf's output in the buffer? */
static int ms__cu_fits(int w, size_t size) { return w >= 0 && (size_t)w < size; }

/* The cache directory into buf; returns 0 when the disk cache is off, 1
   when on, -1 when the path does not fit in size bytes (refused: a cut
   path names a directory nobody asked for). */
static int ms__cu_cache_dir(const ms_cuda_compile_opts *o, char *buf, size_t size) {
  const char *e;
  if (o && o->no_disk_cache) return 0;
  if (o && o->cache_dir) {
    if (!o->cache_dir[0]) return 0;
    return ms__cu_fits(snprintf(buf, size, "%s", o->cache_dir), size) ? 1 : -1;
  }
  e = ms__cu_getenv("MYSAMPLE_CUDA_CACHE");
  if (e && *e) {   /* (empty: as unset; it named "/cuda-<hash>.bin" at the root) */
    if (!strcmp(e, "off") || !strcmp(e, "OFF") || !strcmp(e, "0")) return 0;
    return ms__cu_fits(snprintf(buf, size, "%s", e), size) ? 1 : -1;
  }
  if ((e = ms__cu_getenv("XDG_CACHE_HOME")) != NULL) return ms__cu_fits(snprintf(buf, size, "%s/mysample", e), size) ? 1 : -1;
#ifdef _WIN32
  if ((e = ms__cu_getenv("LOCALAPPDATA")) != NULL) return ms__cu_fits(snprintf(buf, size, "%s\\mysample", e), size) ? 1 : -1;
#endif
  if ((e = ms__cu_getenv("HOME")) != NULL) return ms__cu_fits(snprintf(buf, size, "%s/.cache/mysample", e), size) ? 1 : -1;
  return 0;
}

/* The offsets of the units in one buffer (16-byte aligned: each is
   loaded as a module from where it lies; a unit not in the build has
   length 0); returns the buffer's size. */
static size_t ms__cu_layout(const size_t *len, size_t *off) {
  size_t n = 0;
  int u;
  for (u = 0; u < MS__CU_UNITS; u++) { off[u] = n; n += (len[u] + 15u) & ~(size_t)15u; }
  return n;
}

/* The header line of a cache file for key, its n_units units' sizes and
   their hash. */
static void ms__cu_cache_head(char *head, size_t size, const char *key, int n_units, const size_t *len,
                              unsigned long long hash) {
  int u, w = snprintf(head, size, "mysample-cuda-cache 4 %s", key);
  for (u = 0; u < n_units && w > 0 && (size_t)w < size; u++)
    w += snprintf(head + w, size - (size_t)w, " %llu", (unsigned long long)len[u]);
  if (w > 0 && (size_t)w < size) snprintf(head + w, size - (size_t)w, " %016llx\n", hash);
}
/* The hash of the n_units units of a buffer laid out by ms__cu_layout. */
static unsigned long long ms__cu_units_hash(const char *data, int n_units, const size_t *len, const size_t *off) {
  unsigned long long h = MS__CU_FNV0;
  int u;
  for (u = 0; u < n_units; u++) h = ms__cu_hash64(data + off[u], len[u], h);
  return h;
}

/* Reads the n_units units of key from an open cache file into one buffer
   laid out by ms__cu_layout (len 0 for the units past n_units); NULL when
   the file is another key's, malformed or short. (tests/fuzz/fuzz_cuda_cache.c
   feeds it any bytes.) */
static char *ms__cu_read_cache_f(FILE *f, const char *key, int n_units, size_t *len, size_t *off, size_t *size) {
  char head[512], want[512], *p, *end;
  char *data = NULL;
  unsigned long long hash = 0;
  int u, ok = 1;
  if (!fgets(head, sizeof head, f) || strncmp(head, "mysample-cuda-cache 4 ", 22) != 0 ||
      !(p = strchr(head + 22, ' '))) return NULL;
  for (u = 0; u < MS__CU_UNITS; u++) len[u] = 0;
  for (u = 0; u < n_units && ok; u++) {
    unsigned long long n = strtoull(p, &end, 10);
    ok = end != p && n > 0 && n <= (1ULL << 30);
    len[u] = (size_t)n;
    p = end;
  }
  if (ok) { hash = strtoull(p, &end, 16); ok = end != p; }
  /* the whole line again from the key, sizes and hash: anything else in
     it (a sign, spaces, another key, more units) and the file is not ours */
  if (ok) ms__cu_cache_head(want, sizeof want, key, n_units, len, hash);
  if (!ok || strcmp(head, want) != 0) return NULL;
  *size = ms__cu_layout(len, off);
  data = (char *)MS__CU_MALLOC(*size);
  for (u = 0; data && u < n_units; u++) {
    if (fread(data + off[u], 1, len[u], f) != len[u]) { MS__CU_FREE(data); data = NULL; }
  }
  if (data && ms__cu_units_hash(data, n_units, len, off) != hash) { MS__CU_FREE(data); data = NULL; }
  return data;
}

static char *ms__cu_read_cache(const char *file, const char *key, int n_units, size_t *len, size_t *off, size_t *size) {
  FILE *f = fopen(file, "rb");
  char *data;
  if (!f) return NULL;
  data = ms__cu_read_cache_f(f, key, n_units, len, off, size);
  fclose(f);
  return data;
}

/* All n bytes to the descriptor (a write may take part of them). */
static int ms__cu_write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
#ifdef _WIN32
    const int w = _write(fd, p, (unsigned)(n < (1u << 30) ? n : (1u << 30)));
#else
    const long w = (long)write(fd, p, n < ((size_t)1 << 30) ? n : ((size_t)1 << 30));
#endif
    if (w <= 0) return 0;
    p += w;
    n -= (size_t)w;
  }
  return 1;
}

static void ms__cu_write_cache(const char *dir, const char *file, const char *key, int n_units, const char *data,
                               const size_t *len, const size_t *off) {
  char tmp[600], head[512];
  static unsigned ms__cu_tmp_counter;
  int ok, u, fd = -1, tries;
  if (ms__cu_mkdir_p(dir) != 0) return;
  /* a name of this process's, created exclusively (O_EXCL: not through a
     link or over a file someone else put there; a stale one of a dead
     process with this pid is skipped) */
  for (tries = 0; tries < 4 && fd < 0; tries++) {
#ifdef _WIN32
    if (!ms__cu_fits(snprintf(tmp, sizeof tmp, "%s.%lu.%u.tmp", file, (unsigned long)GetCurrentProcessId(), ms__cu_tmp_counter++),
                     sizeof tmp)) return;
    fd = _open(tmp, _O_WRONLY | _O_CREAT | _O_EXCL | _O_BINARY, _S_IREAD | _S_IWRITE);
#else
    if (!ms__cu_fits(snprintf(tmp, sizeof tmp, "%s.%ld.%u.tmp", file, (long)getpid(), ms__cu_tmp_counter++), sizeof tmp)) return;
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
#endif
  }
  if (fd < 0) return;
  /* written through the descriptor (fdopen is POSIX's, not C99's: a
     strict -std=c99 build does not declare it) */
  ms__cu_cache_head(head, sizeof head, key, n_units, len, ms__cu_units_hash(data, n_units, len, off));
  ok = ms__cu_write_all(fd, head, strlen(head));
  for (u = 0; u < n_units && ok; u++) ok = ms__cu_write_all(fd, data + off[u], len[u]);
#ifdef _WIN32
  ok = (_close(fd) == 0) && ok;
#else
  ok = (close(fd) == 0) && ok;
#endif
  if (!ok) { remove(tmp); return; }
#ifdef _WIN32
  if (!MoveFileExA(tmp, file, MOVEFILE_REPLACE_EXISTING)) remove(tmp);
#else
  if (rename(tmp, file) != 0) remove(tmp);
#endif
}

/* Is `name` in the binary? (the symbol table of a CUBIN or ".entry name" in PTX) */
static int ms__cu_has_symbol(const char *data, size_t size, const char *name) {
  size_t n = strlen(name), i;
  for (i = 0; i + n < size; i++) {
    if (data[i] == name[0] && !memcmp(data + i, name, n)) {
      char after = data[i + n];
      char before = i ? data[i - 1] : 0;
      if ((after == 0 || after == '(' || after == ' ') && (before == 0 || before == ' ' || before == '\t')) return 1;
    }
  }
  return 0;
}

/* Picks the target for compute capability sm from NVRTC's supported list. */
static int ms__cu_pick_target(int sm, char *target, size_t size, int *is_ptx) {
  const ms__cu_global *g = &ms__cu_g;
  int i, best = -1;
  for (i = 0; i < g->n_archs; i++) {
    if (g->archs[i] == sm) { snprintf(target, size, "sm_%d", sm); *is_ptx = 0; return 1; }
    if (g->archs[i] < sm && g->archs[i] > best) best = g->archs[i];
  }
  if (best < 0) return 0;
  snprintf(target, size, "compute_%d", best);
  *is_ptx = 1;
  return 1;
}

/* One NVRTC program: a unit's compile, run on its own thread. */
typedef struct ms__cu_job {
  const char *src;
  const char *opts[16];
  int n_opts, is_ptx;
  char unit_opt[24];   /* "-DMS_UNIT=" and any int */
  const char *failed;   /* NULL, or the step that failed ... */
  int err, oom;         /* ... with NVRTC's code, or out of memory */
  char *data;           /* the binary (malloc) */
  size_t size;
  char *log;            /* NVRTC's log of a failed compile (malloc), or NULL */
  double seconds;
} ms__cu_job;

static void ms__cu_job_run(ms__cu_job *j) {
  const ms__cu_nvrtc *r = &ms__cu_g.rtc;
  ms__nvrtcProgram prog = NULL;
  size_t ls = 0;
  const double t0 = ms__cu_now();
  int e = r->create(&prog, j->src, "mysample_kernels.cu", 0, NULL, NULL);
  if (e != 0) { j->failed = "nvrtcCreateProgram"; j->err = e; return; }
  e = r->compile(prog, j->n_opts, j->opts);
  if (e != 0) {
    j->failed = "nvrtcCompileProgram";
    j->err = e;
    if (r->log_size(prog, &ls) == 0 && ls > 1 && (j->log = (char *)MS__CU_MALLOC(ls + 1)) != NULL) {
      if (r->log(prog, j->log) != 0) j->log[0] = 0;
      j->log[ls] = 0;
    }
  } else if ((e = j->is_ptx ? r->ptx_size(prog, &j->size) : r->cubin_size(prog, &j->size)) != 0 || j->size == 0) {
    j->failed = "NVRTC produced no binary";
    j->err = e;
  } else if (!(j->data = (char *)MS__CU_MALLOC(j->size))) {
    j->failed = "out of memory";
    j->oom = 1;
  } else if ((e = j->is_ptx ? r->ptx(prog, j->data) : r->cubin(prog, j->data)) != 0) {
    j->failed = j->is_ptx ? "nvrtcGetPTX" : "nvrtcGetCUBIN";
    j->err = e;
    MS__CU_FREE(j->data);
    j->data = NULL;
  }
  r->destroy(&prog);
  j->seconds = ms__cu_now() - t0;
}

/* A job on a thread of its own: start (0 when it cannot: the caller runs
   the job itself) and join. 8 MB stacks: NVRTC's parser and optimiser
   recurse, and some platforms' default thread stacks are far smaller than
   a main thread's. MYSAMPLE_CUDA_NO_PTHREAD: never starts. */
#if defined(_WIN32)
typedef HANDLE ms__cu_thread;
static unsigned __stdcall ms__cu_job_thread(void *p) { ms__cu_job_run((ms__cu_job *)p); return 0; }
static int ms__cu_thread_start(ms__cu_thread *t, ms__cu_job *j) {
  *t = (HANDLE)_beginthreadex(NULL, 8u << 20, ms__cu_job_thread, j, 0, NULL);
  return *t != 0;
}
static void ms__cu_thread_join(ms__cu_thread t) { WaitForSingleObject(t, INFINITE); CloseHandle(t); }
#elif !defined(MYSAMPLE_CUDA_NO_PTHREAD)
typedef pthread_t ms__cu_thread;
static void *ms__cu_job_thread(void *p) { ms__cu_job_run((ms__cu_job *)p); return NULL; }
static int ms__cu_thread_start(ms__cu_thread *t, ms__cu_job *j) {
  pthread_attr_t attr;
  const int attr_ok = pthread_attr_init(&attr) == 0;
  int ok;
  if (attr_ok) pthread_attr_setstacksize(&attr, (size_t)8 << 20);
  ok = pthread_create(t, attr_ok ? &attr : NULL, ms__cu_job_thread, j) == 0;
  if (attr_ok) pthread_attr_destroy(&attr);
  return ok;
}
static void ms__cu_thread_join(ms__cu_thread t) { pthread_join(t, NULL); }
#else
typedef int ms__cu_thread;
static int ms__cu_thread_start(ms__cu_thread *t, ms__cu_job *j) { (void)t; (void)j; return 0; }
static void ms__cu_thread_join(ms__cu_thread t) { (void)t; }
#endif

/* Compiles the build's n_units units, units 1.. on threads of their own
   and unit 0 on the calling one; a thread that cannot start runs its unit
   here afterwards (MYSAMPLE_CUDA_NO_PTHREAD: all of them). On success
   *data holds the units laid out by ms__cu_layout (len 0, seconds 0 for
   the units past n_units). */
static ms_result ms__cu_compile_units(const char *src, const char *const *opts, int n_opts, int n_units, int is_ptx, long fast,
                                      const char *fast_opt,
                                      const char *target, char **data, size_t *len, size_t *off, size_t *size,
                                      double *seconds, char *log, size_t log_size) {
  ms__cu_job jobs[MS__CU_UNITS];
  ms__cu_thread th[MS__CU_UNITS];
  int started[MS__CU_UNITS];
  ms_result rc = MS_OK;
  int u, i;
  memset(jobs, 0, sizeof jobs);
  for (u = 0; u < MS__CU_UNITS; u++) {
    ms__cu_job *j = &jobs[u];
    j->src = src;
    j->is_ptx = is_ptx;
    for (i = 0; i < n_opts && i < 14; i++) j->opts[i] = opts[i];
    snprintf(j->unit_opt, sizeof j->unit_opt, "-DMS_UNIT=%d", u);
    j->opts[i++] = j->unit_opt;
    if (ms__cu_unit_fast_ok(opts, n_opts, ms__cu_g.rtc_major, ms__cu_g.rtc_minor, fast, u)) j->opts[i++] = fast_opt;
    j->n_opts = i;
  }
  started[0] = 0;
  for (u = 1; u < n_units; u++) started[u] = ms__cu_thread_start(&th[u], &jobs[u]);
  ms__cu_job_run(&jobs[0]);
  for (u = 1; u < n_units; u++) {
    if (started[u]) ms__cu_thread_join(th[u]);
    else ms__cu_job_run(&jobs[u]);
  }
  for (u = 0; u < n_units && rc == MS_OK; u++) {
    const ms__cu_job *j = &jobs[u];
    if (!j->failed) continue;
    rc = j->oom ? MS_ERR_OUT_OF_MEMORY : MS_ERR_COMPILE;
    if (j->oom) ms__cu_msg(log, log_size, "out of memory");
    else if (j->log && log && log_size > 0)
      snprintf(log, log_size, "%s (%s, unit %d): %s\n%s", j->failed, target, u, ms__cu_g.rtc.error_string(j->err), j->log);
    else ms__cu_msg(log, log_size, "%s (%s, unit %d): %s", j->failed, target, u, ms__cu_g.rtc.error_string(j->err));
  }
  if (rc == MS_OK) {
    for (u = 0; u < MS__CU_UNITS; u++) { len[u] = jobs[u].size; seconds[u] = jobs[u].seconds; }
    *size = ms__cu_layout(len, off);
    if (!(*data = (char *)MS__CU_MALLOC(*size))) { ms__cu_msg(log, log_size, "out of memory"); rc = MS_ERR_OUT_OF_MEMORY; }
    else {
      memset(*data, 0, *size);
      for (u = 0; u < MS__CU_UNITS; u++) if (len[u]) memcpy(*data + off[u], jobs[u].data, len[u]);
    }
  }
  for (u = 0; u < MS__CU_UNITS; u++) {
    if (jobs[u].data) MS__CU_FREE(jobs[u].data);
    if (jobs[u].log) MS__CU_FREE(jobs[u].log);
  }
  return rc;
}

/* Finds or makes the units for sm. On success *out points into the
   in-memory cache (never freed). Caller holds ms__cu_compile_mu. */
static ms_result ms__cu_compile_locked(int sm, const ms_cuda_compile_opts *o, ms_cuda_compile_info *info,
                                       const ms__cu_bin **out, char *log, size_t log_size) {
  const ms__cu_global *g = &ms__cu_g;
  char target[24], key[256], dir[400], file[480], archopt[40];
  const char *opts[12];
  const char *src;
  int is_ptx = 0, n_opts = 0, i, disk;
  const int n_units = ms__cu_n_units(o && o->topp_bins);
  long fast;
  const char *fast_opt;
  unsigned long long opt_hash = MS__CU_FNV0;
  ms__cu_bin *b;
  char *data = NULL;
  size_t size = 0, len[MS__CU_UNITS], off[MS__CU_UNITS];
  double seconds[MS__CU_UNITS];
  int source = 0;
  ms_result rc;

  src = ms__cu_get_source();
  if (!src) { ms__cu_msg(log, log_size, "out of memory"); return MS_ERR_OUT_OF_MEMORY; }
  if (!ms__cu_pick_target(sm, target, sizeof target, &is_ptx)) {
    ms__cu_msg(log, log_size, "NVRTC %d.%d supports no architecture at or below sm_%d (oldest: sm_%d); "
               "point MYSAMPLE_NVRTC_PATH at an older NVRTC", g->rtc_major, g->rtc_minor, sm, g->archs[0]);
    return MS_ERR_COMPILE;
  }
  snprintf(archopt, sizeof archopt, "-arch=%s", target);
  opts[n_opts++] = archopt;
  for (i = 0; ms__cu_opts[i]; i++) opts[n_opts++] = ms__cu_opts[i];
  /* NVRTC 12.4 and newer: -minimal leaves out the runtime API's
     declarations (texture types, cudadevrt, launches from the device),
     which the kernels never use: the front end's share of a program
     halves (84 to 42 ms, one core, NVRTC 13.0), the binaries byte for
     byte the same */
  if (g->rtc_major > 12 || (g->rtc_major == 12 && g->rtc_minor >= 4)) opts[n_opts++] = "-minimal";
  if (o && o->topp_bins) opts[n_opts++] = "-DMS_TOPP_BINS=1";   /* (in the key through the options' hash) */
  i = ms__cu_extra_opts(opts + n_opts, (int)(sizeof opts / sizeof opts[0]) - n_opts);
  if (i < 0) {
    ms__cu_msg(log, log_size, "MYSAMPLE_CUDA_NVRTC_OPTIONS: more than %d options or 255 characters", MS__CU_EXTRA_OPTS);
    return MS_ERR_INVALID_PARAM;
  }
  n_opts += i;
  for (i = 0; i < n_opts; i++) opt_hash = ms__cu_fnv(opts[i], strlen(opts[i]) + 1, opt_hash);
  fast = ms__cu_fast_units();
  if (fast < 0) {
    ms__cu_msg(log, log_size, "MYSAMPLE_CUDA_FAST_UNITS: '%s' is not a list of program numbers 0-10 (\"3,5,6\"), \"all\" or \"none\"",
               ms__cu_getenv("MYSAMPLE_CUDA_FAST_UNITS"));
    return MS_ERR_INVALID_PARAM;
  }
  if (!(fast_opt = ms__cu_fast_level())) {
    ms__cu_msg(log, log_size, "MYSAMPLE_CUDA_FAST_LEVEL: '%s' is not min, mid or max", ms__cu_getenv("MYSAMPLE_CUDA_FAST_LEVEL"));
    return MS_ERR_INVALID_PARAM;
  }
  for (i = 0; i < n_units; i++)   /* the per-program options are part of the key too, with the program */
    if (ms__cu_unit_fast_ok(opts, n_opts, g->rtc_major, g->rtc_minor, fast, i)) {
      opt_hash = ms__cu_fnv(fast_opt, strlen(fast_opt) + 1, opt_hash);
      opt_hash = ms__cu_fnv(&i, sizeof i, opt_hash);
    }
  snprintf(key, sizeof key, "v%s-nvrtc%d.%d-%s-src%016llx-opt%016llx", MYSAMPLE_VERSION_STRING,
           g->rtc_major, g->rtc_minor, target, ms__cu_source_hash, opt_hash);
  if (info) {
    snprintf(info->target, sizeof info->target, "%s", target);
    info->is_ptx = is_ptx;
    info->nvrtc_major = g->rtc_major;
    info->nvrtc_minor = g->rtc_minor;
    info->cache_file[0] = 0;
  }
  /* 1. memory */
  if (!(o && o->no_memory_cache)) {
    for (b = ms__cu_bins; b; b = b->next) if (!strcmp(b->key, key)) { *out = b; if (info) info->source = 1; return MS_OK; }
  }
  /* 2. disk */
  disk = ms__cu_cache_dir(o, dir, sizeof dir);
  if (disk < 0) {
    ms__cu_msg(log, log_size, "the disk cache's directory is longer than %d bytes; name a shorter one (cache_dir, "
               "MYSAMPLE_CUDA_CACHE) or turn the disk cache off", (int)sizeof dir - 1);
    return MS_ERR_INVALID_PARAM;
  }
  if (disk) {
    snprintf(file, sizeof file, "%s/cuda-%016llx.bin", dir, ms__cu_fnv(key, strlen(key), MS__CU_FNV0));
    if (info) snprintf(info->cache_file, sizeof info->cache_file, "%s", file);
    data = ms__cu_read_cache(file, key, n_units, len, off, &size);
    if (data) source = 2;
  }
  /* 3. NVRTC */
  if (!data) {
    rc = ms__cu_compile_units(src, opts, n_opts, n_units, is_ptx, fast, fast_opt, target, &data, len, off, &size, seconds, log,
                              log_size);
    if (rc != MS_OK) return rc;
    if (info) for (i = 0; i < info->n_kernels; i++) info->kernel_seconds[i] = seconds[info->kernel_program[i]];
    if (disk) ms__cu_write_cache(dir, file, key, n_units, data, len, off);
  }
  /* one entry a key: with no_memory_cache the compile or read above ran
     anyway (to time it), and the entry already held, the same binaries,
     stays (others may hold it; entries live as long as the process) */
  for (b = ms__cu_bins; b; b = b->next)
    if (!strcmp(b->key, key)) { MS__CU_FREE(data); *out = b; if (info) info->source = source; return MS_OK; }
  b = (ms__cu_bin *)MS__CU_MALLOC(sizeof *b);
  if (!b) { MS__CU_FREE(data); ms__cu_msg(log, log_size, "out of memory"); return MS_ERR_OUT_OF_MEMORY; }
  memset(b, 0, sizeof *b);
  snprintf(b->key, sizeof b->key, "%s", key);
  snprintf(b->target, sizeof b->target, "%s", target);
  b->is_ptx = is_ptx;
  b->n_units = n_units;
  b->size = size;
  b->data = data;
  memcpy(b->off, off, sizeof off);
  memcpy(b->len, len, sizeof len);
  b->next = ms__cu_bins;
  ms__cu_bins = b;
  if (info) info->source = source;
  *out = b;
  return MS_OK;
}

MSDEF ms_result ms_cuda_compile(int32_t sm, const ms_cuda_compile_opts *opts,
                                ms_cuda_compile_info *info, char *log, size_t log_size) {
  ms_result rc;
  const ms__cu_bin *b = NULL;
  double t0 = ms__cu_now();
  int i;
  if (log && log_size) log[0] = 0;
  if (info) {
    const int n_units = ms__cu_n_units(opts && opts->topp_bins);
    int n = 0;
    memset(info, 0, sizeof *info);
    for (i = 0; ms__cu_kernel_names[i] && n < MS_CUDA_MAX_KERNELS; i++) {   /* the build's kernels */
      if (ms__cu_kernel_unit[i] >= n_units) continue;
      info->kernel[n] = ms__cu_kernel_names[i];
      info->kernel_program[n++] = ms__cu_kernel_unit[i];
    }
    info->n_kernels = n;
  }
  if (sm < 10 || sm > 10000) { ms__cu_msg(log, log_size, "bad compute capability %d (want e.g. 90 for sm_90)", (int)sm); return MS_ERR_INVALID_PARAM; }
  rc = ms_cuda_load_nvrtc(opts ? opts->nvrtc_path : NULL, log, log_size);
  if (rc != MS_OK) return rc;
  if (log && log_size) log[0] = 0;
  ms__cu_lock(&ms__cu_compile_mu);
  rc = ms__cu_compile_locked(sm, opts, info, &b, log, log_size);
  ms__cu_unlock(&ms__cu_compile_mu);
  if (info) {
    info->seconds = ms__cu_now() - t0;
    if (rc == MS_OK) {
      int u;
      info->binary_size = 0;
      for (u = 0; u < MS__CU_UNITS; u++) info->binary_size += b->len[u];
      for (i = 0; i < info->n_kernels; i++) {
        u = info->kernel_program[i];
        info->kernel_found[i] = ms__cu_has_symbol(b->data + b->off[u], b->len[u], info->kernel[i]);
      }
    }
  }
  return rc;
}
