/* mysample GPU kernels: the sampling pipeline of mysample.h on device rows.
   Compiled at run time by NVRTC (mysample_cuda.h embeds this file); it
   includes nothing, so no toolkit include directory is needed.

   Launch sequence per batch (all on the caller's stream). Each full-row
   pass runs G blocks per row (small batches: G chunks of whole draw
   tiles, so the batch fills the GPU; large ones: G = 1), and a row's
   decisions pass from kernel to kernel in its Sel state:
     ms_k_mask   grid B        rows with masks/bias: allow bits and bias bits
     ms_k_stats  grid B x G    each block takes a chunk of a row (masks,
                               bias, penalties, max, argmax, NaN/Inf, raw
                               log-sum-exp; a small top_k's lists of
                               candidates); the last block of a row to
                               finish combines the partials into the row's
                               Sel state
     ms_k_pbstats grid B x G   (a build with top_p's bins) ms_k_stats for
                               the rows whose read counts the bins
                               (F_PB_STATS), beside it
     ms_k_tail   grid B        rows with a small top_k (F_KFAST): the
                               candidates the statistics' lists give
                               (kfast_row), the end of an F_END row on
                               them, and the rare rows
                               whose lists fell short, by the passes'
                               rules, one block a row
     ms_k_pass   grid B x G    one launch per full-row pass of the
     ms_k_sums                 selection, for the other rows (ms_k_pass:
                               3 radix passes of top_k
                               or its candidates; 3 of top_p;
                               ms_k_sums: the draw's tile sums; min_p
                               needs no pass);
                               blocks add their chunk's histogram into the
                               row's Sel and the last block to finish
                               takes the pass's decision for the next launch
                               (a "last block" count, never a spin barrier)
     ms_k_pbin   grid B x G    (top_p's bins) P_PBIN and P_PGATHER, before
     ms_k_pgather              the radix passes of top_p (which take the
                               rows the bins leave undecided)
     ms_k_list   grid B        llama.cpp rows only: the top_k list and the
                               chain's stages on it (the token, probs,
                               processed logprobs into Sel)
     ms_k_row    grid B        one block per row: what is left after the
                               passes (top_k's candidates, the draw inside
                               one tile, probs) and the device-side
                               sequence update
     ms_k_lp     grid B        rows with logprobs, one block a row, after
                               ms_k_row: the token's logprob, its rank,
                               the top N, then the row's result.
   A row without logprobs (F_END) ends before ms_k_row: a greedy one in
   ms_k_stats, a small top_k's in ms_k_tail, one without top_k or of the
   SGLang profile in P_SUMS's last block (ms_k_sums); ms_k_row skips it,
   and is not launched when every row ended so (nor are the passes when no
   row needs them).
   (No kernel holds the whole pipeline: NVRTC compiles the kernels in
   parallel, and the largest bounds a cold compile.)
   Every filter keeps an upper set of values, so the kept set of a row is
   { i : logit_i >= theta } for one threshold theta (in the SGLang
   profile, ties at theta past a position are cut: ids <= Sel.cut stay);
   no stage sorts. */

/* mysample_cuda.h compiles the kernels as eight NVRTC programs at once
   (eleven with top_p's bins, -DMS_TOPP_BINS=1: units 8 to 10),
   program u with -DMS_UNIT=u (its ms__cu_kernel_unit says which kernel is
   in which); without MS_UNIT (the emulator) every kernel is compiled. */
#ifdef MS_UNIT
#define MS_IN_UNIT(u) (MS_UNIT == (u))
#else
#define MS_IN_UNIT(u) 1
#endif
/* The block-wide helpers (reductions, scans, find_bin) and the tail's
   finishing steps as calls rather than inlined copies in the small
   programs (units 3 and 6, ms_k_tail's: their kernels call each a
   handful of times a row) and in ms_k_stats's (unit 2: ten reductions a
   block, after the read): ptxas then allocates registers over several
   small functions instead of one large one, and the program compiles
   faster (unit 6: 1.26 to 1.08 s; unit 2: 8%, its loops the same code
   and still 40 registers; sm_90, one core). Elsewhere they stay inlined:
   as calls they gave ms_k_sums a 240-byte stack and spills. */
#if defined(MS_UNIT) && (MS_UNIT == 2 || MS_UNIT == 3 || MS_UNIT == 6)
#define MS_BLOCK_FN __noinline__
#else
#define MS_BLOCK_FN
#endif
/* put_result (once a row) as a call in ms_k_stats's and ms_k_tail's
   programs: inlined it cost ms_k_stats's program 0.1-0.15 s of its
   compile. Elsewhere the call took stacks from 0-72 bytes to 208-320
   (ms_k_row, ms_k_sums, ms_k_lp, ms_k_mask) and ms_k_mask 5 registers. */
#if defined(MS_UNIT) && (MS_UNIT == 2 || MS_UNIT == 6)
#define MS_RESULT_FN __noinline__
#else
#define MS_RESULT_FN
#endif

typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;

#define MS_NT 1024         /* threads of ms_k_row */
#define MS_ST 256          /* threads of the other kernels */
#define MS_BINS 2048       /* radix histogram bins (11 bits) */
#define MS_MAXT 2048       /* draw tiles per row */
#define MS_CAND 1024       /* top-N candidates (logprobs <= 1024; MS__CUDA_MAX_TOP refuses more) */
#define MS_KEY_NEG_INF 0x007FFFFFu

/* Row flags: keep in sync with MS__CUDA_F_* in api_cuda.h. */
#define F_GREEDY   1
#define F_HF       2
#define F_WORK     4
#define F_MASK     8
#define F_POS_SLOT 16
#define F_ACCEPT   32
#define F_LP_PROC  64
#define F_PEN      128
#define F_BIAS     256
#define F_ALLOWED  512
#define F_MINTOK   1024
#define F_RAW_LSE  2048
#define F_END      4096   /* a row ending before ms_k_row: ms_k_stats (greedy), ms_k_tail (F_KFAST), P_SUMS's last block */
#define F_TOPP_BINS 16384 /* top_p's threshold by bins (P_PBIN, P_PGATHER; ms_cuda_desc.topp), the radix passes its fallback */
#define F_JOINT    8192   /* SGLang: penalties (output only) before the bias; top_k, top_p and min_p cut
                             the whole row's distribution; ties at a cut are cut by position (id order) */
#define F_BADW     32768  /* bad words of two ids or more, matched against the slot's history (ms_k_mask) */
#define F_NGRAM    65536  /* HF no_repeat_ngram over the slot's prompt + output (ms_k_mask) */
#define F_DECAY    131072 /* HF exponential length decay of the EOS logit (pointwise) */
#define F_BW_ALL   524288 /* bad words match prompt + output (HF, llama.cpp), not the output only (vLLM) */
#define F_LLPEN    1048576 /* llama.cpp penalties over the slot's last ll_last_n tokens (ms_k_mask lists them) */
#define F_LLAMA    262144 /* llama.cpp: exactly top_k (ties by id) by the count passes, then its list
                             stages (Row.ll_*) in ms_k_row; the draw walks the list in its order */
#define F_SIGMA    2097152 /* F_LLAMA: top-n-sigma's cut over the whole row first (ms_k_list) */
#define F_BUDGET   4194304 /* the slot has a reasoning budget: ms_k_mask forces its end sequence (Row.forced) */
#define F_KFAST    8388608 /* top_k <= MS_KFAST_MAX by its candidates from the statistics' lists (ms_k_tail, no pass) */
#define F_PB_STATS 16777216 /* F_TOPP_BINS: the statistics count the bins as they read (ms_k_pbstats; no P_PBIN) */

/* Result codes written to ms_cuda_out.status (values of ms_result). */
#define ST_NAN 5
#define ST_INF 6
#define ST_ALL_MASKED 7
#define ST_CAPACITY 10   /* no_repeat_ngram: the history is longer than the device keeps (max_history) */

/* Packed row parameters (200 bytes): ms__cuda_row in api_cuda.h. Offsets
   count 4-byte words from the start of the parameter blob. */
struct Row {
  u64 seed, position;
  float inv_temp, top_p, min_p, presence, frequency, repetition;  /* inv_temp = 1 / T (after the profile's floor) */
  i32 top_k, flags, slot, min_tokens, eos, logprobs;
  i32 allowed_off, n_allowed, banned_off, n_banned, stop_off, n_stop;
  i32 bias_tok_off, n_bias, bias_val_off, bitmask_off, status;
  i32 bw_off, n_bw;       /* F_BADW: n_bw (offset, length) pairs of the bad words' ids in the blob */
  i32 ngram;              /* F_NGRAM: no_repeat_ngram_size */
  i32 decay_start;        /* F_DECAY: the output length after which EOS's logit grows ... */
  float decay_factor;     /* ... by |l| * (factor^(length - start) - 1) */
  float ll_top_p, ll_log_min_p, ll_temp;   /* F_LLAMA: the list's top_p, logf(min_p) (the host's), T */
  i32 ll_stages;          /* F_LLAMA: the stages after top_k, 3 bits each from the lowest: 1 top_p, 2 min_p,
                             3 temperature, 4 typical, 5 XTC, 6 top-n-sigma */
  i32 ll_last_n;          /* F_LLPEN: the window (-1: the whole sequence), ... */
  i32 ll_pen_off, ll_n_pen;   /* ... its (token, count) pairs in the blob, by token (ms_k_mask writes them) */
  float ll_typical, ll_xtc_p, ll_xtc_t;    /* F_LLAMA: typical's mass, XTC's probability and threshold, ... */
  float ll_dyn_range, ll_dyn_exp;          /* ... dynamic temperature (range > 0), ... */
  i32 ll_min_keep;                         /* ... min_keep ... */
  float ll_sigma;                          /* ... and top-n-sigma's n (F_SIGMA, or stage 6) */
  i32 forced;             /* F_BUDGET: the token the budget forces (ms_k_mask writes it; -1: none) */
  float eps_cut, eta_cut; /* HF epsilon and eta cutoffs (0: off): P_EPS, P_ETA */
  i32 given;              /* ms_cuda_batch.score_tokens: the row reports this token instead of a draw's (-1: draw);
                             such a row has logprobs (>= 0), so it never ends before ms_k_row */
};

/* Kernel arguments, passed by value: ms__cuda_args in api_cuda.h. */
struct Args {
  u64 logits, stride, blob, allow_bits, bias_bits, work, parts;
  u64 seq_state, seq_len, seq_stride, tokens, out, top, probs, probs_stride;
  i32 n_rows, vocab, words, n_parts, chunk, top_stride, n_slots, pass;
  u64 sel;
  u64 hist;               /* the slots' histories: see SeqArgs */
  i32 hist_cap, hist_pad;
  u64 budget;             /* the slots' reasoning budgets: MS_BUD_WORDS words each (budget_step) */
  u64 pcand;              /* F_TOPP_BINS: per row, the keys P_PGATHER lists, then their ids (MS_PCAND each) */
};

/* Per-chunk statistics of a row (ms_k_stats -> ms_k_row). */
struct Part { float m; i32 am; float mr; float sr; i32 fl; i32 pad; };

/* Passes of ms_k_pass (Args.pass): keep in sync with MS__CUDA_P_* in
   impl_launch.c. */
#define P_COUNT 0   /* 0, 1, 2: top_k's radix passes */
#define P_CAND  3   /* top_k's candidates, when the first radix pass found few */
#define P_MASS  4   /* 4, 5, 6: top_p's radix passes */
#define P_SUMS  7   /* the draw's tile sums, the kept count, the last kept id */
#define P_PBIN  8   /* F_TOPP_BINS: top_p's bins (before P_MASS) ... */
#define P_PGATHER 9 /* ... and the tile sums with the threshold's bin listed */
#define P_EPS   10  /* HF epsilon: the kept mass, then the cut (before P_SUMS) ... */
#define P_ETA   11  /* ... and eta: the kept mass and entropy, then the cut */

/* The selection state of a row in global memory (ms_k_stats's last
   block initialises it, ms_k_pass's last blocks advance it, ms_k_row reads
   it). MS__CUDA_SEL_BYTES in impl_launch.c is its size. */
struct Sel {
  Part P;                 /* the combined statistics of the row */
  i32 status;             /* 0, or ST_* from the statistics */
  i32 stats_arrived;      /* blocks of ms_k_stats done (back to 0 at the last: arrive) */
  i32 arrived;            /* blocks of the current pass done (back to 0 at the last: arrive) */
  u32 t_minp;             /* min_p's threshold key (minp_key) */
  u32 lower;              /* the current radix selection: keys >= lower ... */
  u32 prefix, pm;         /* ... whose bits under pm equal prefix */
  u32 tk, tp;             /* top_k's and top_p's threshold keys */
  i32 cdone, pdone;       /* top_k / top_p decided (early when few keys qualify) */
  i32 cand;               /* top_k resolves on candidates: keys >= cedge (1; 2: ms_k_tail gathers them; 3: the statistics' lists held them) ... */
  u32 cedge;
  u32 ncand;              /* ... gathered by P_CAND into ck / cid */
  u32 kkeep;              /* F_JOINT: how many ties at tk top_k keeps (0xffffffff: all) */
  i32 cut;                /* the kept set: keys > theta, and keys == theta with ids <= cut (ms_k_ties) */
  double prest;           /* F_JOINT top_p: p * Z (next double up) less the mass above tp ... */
  u64 praw;               /* ... and the integer mass (2^-44) of the keys equal to tp; 0: not recorded */
  double target;          /* what is left to select below prefix */
  u64 hist[MS_BINS];      /* the current pass's histogram (counts, or masses in 2^-44: fx_add), zero between passes */
  double tsum[MS_MAXT];   /* the draw's tile sums (P_SUMS); with hist, ms_k_stats's scratch (F_KFAST: keep them adjacent) */
  u32 ck[MS_CAND];        /* candidates' keys and ids, in no order */
  i32 cid[MS_CAND];
  i32 ll_token;           /* F_LLAMA: ms_k_list's token (-1: nothing kept), ... */
  float ll_lp;            /* ... its processed logprob, rank and top-list length */
  i32 ll_rank, ll_ntop;
  u32 t_eps;              /* HF epsilon / eta: their threshold key (P_EPS, P_ETA; 0: none) */
  u32 nab;                /* F_PB_STATS: keys above the anchor listed in A.pcand by ms_k_stats's blocks (its last block zeroes it) */
  double lp_z;            /* a row whose logprobs ms_k_lp adds (lp_go): ms_k_row's mass Z of the kept set, ... */
  u32 lp_theta;           /* ... its kept set (kept_at(key, id, lp_theta, lp_cut)), ... */
  i32 lp_cut;
  i32 lp_token, lp_nkept; /* ... the token and how many were kept, ... */
  i32 lp_cand;            /* ... whether it resolved on candidates (lp_nkept exact), ... */
  i32 lp_go;              /* ... and 1 until ms_k_lp has written the row's result (ms_k_stats's last block zeroes it) */
  u64 pz, pa;             /* F_TOPP_BINS: the integer masses (2^-44) of the keys >= lower and >= pk_hi (P_PGATHER) */
  u32 pk_lo, pk_hi;       /* the keys of the bins that may hold top_p's threshold (P_PBIN) */
  i32 pbins;              /* the bins hold the threshold: 1 P_PBIN's, 2 the statistics' (F_PB_STATS); 0: the radix passes decide */
  i32 sums_done;          /* P_PGATHER or ms_k_tail summed the draw's tiles: P_SUMS skips the row (the last word: tests read it) */
};

/* A block's arrival in its row's count (Sel.stats_arrived, Sel.arrived)
   of n_parts blocks: whether it is the last, whose arrival takes the
   count back to 0 in the same atomic (atomicInc wraps), so no store
   resets it beside the others' atomics (a data race in CUDA's memory
   model, whatever a GPU does with it: the race check across blocks
   reported the plain stores that did until session 29). */
__device__ __forceinline__ bool arrive(i32 *count, i32 n_parts) {
  return atomicInc((u32 *)count, (u32)(n_parts - 1)) == (u32)(n_parts - 1);
}
static_assert(sizeof(Sel) == 41160, "Sel: MS__CUDA_SEL_BYTES in impl_launch.c");

/* ms_cuda_out in api_cuda.h. */
struct Out { i32 token; float logprob; i32 rank; i32 status; i32 n_top; i32 greedy; u64 seed; u64 position; };
struct TopEntry { i32 token; float logprob; };

/* ---- helpers -------------------------------------------------------------- */

/* The first statement of every kernel. Launched with programmatic stream
   serialization (sm_90+, ms__cuda_launch), a kernel may start while the
   one before it on the stream still runs: griddepcontrol.wait holds it
   until that one has finished and its memory is visible (so nothing here
   reads or writes global memory before it), and launch_dependents lets
   the next kernel launch as soon as every block of this one has started.
   A no-op for a kernel launched the usual way, and not compiled below
   sm_90 or in the emulator. */
__device__ __forceinline__ void ms_pdl_start() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ float ms_neg_inf() { return __int_as_float(0xff800000); }
__device__ __forceinline__ float ms_pos_inf() { return __int_as_float(0x7f800000); }

/* Order-preserving map of a float to u32 (larger float, larger key); -0 and
   +0 map to the same key because they are equal values. */
__device__ __forceinline__ u32 fkey(float f) {
  u32 u = __float_as_uint(f == 0.0f ? 0.0f : f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
/* The float of a key (fkey's inverse; the key of 0 gives +0). */
__device__ __forceinline__ float unkey(u32 k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

/* Philox4x32-10 and the 53-bit uniform: the same formula as ms_uniform in
   src/impl_rng.c (counter {pos lo, pos hi, purpose, 0}, key {seed lo, hi};
   u = ((w0 >> 5) * 2^26 + (w1 >> 6)) * 2^-53). */
__device__ double ms_uniform_dev(u64 seed, u64 position, u32 purpose) {
  u32 c0 = (u32)position, c1 = (u32)(position >> 32), c2 = purpose, c3 = 0;
  u32 k0 = (u32)seed, k1 = (u32)(seed >> 32);
  for (int r = 0; r < 10; r++) {
    u32 lo0 = 0xD2511F53u * c0, hi0 = __umulhi(0xD2511F53u, c0);
    u32 lo1 = 0xCD9E8D57u * c2, hi1 = __umulhi(0xCD9E8D57u, c2);
    u32 n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0; c1 = lo1; c2 = n2; c3 = lo0;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
  return ((double)(c0 >> 5) * 67108864.0 + (double)(c1 >> 6)) * (1.0 / 9007199254740992.0);
}

/* The CPU's expf (src/simd_dispatch.c ms__expf: Cephes range reduction
   and a degree-5 polynomial, subnormals kept down to -104), operation by operation
   with round-to-nearest intrinsics so no FMA contraction changes a bit:
   the GPU's weights are then the CPU's scalar weights. */
__device__ __forceinline__ float ms_expf_core_dev(float x) {
  /* n = round(x log2 e) through 1.5 * 2^23, whose bits also give n as an
     integer (no float-to-int conversion, a slow-rate instruction) */
  const float t = __fadd_rn(__fmul_rn(x, 1.44269504088896341f), 12582912.0f);
  const float n = __fsub_rn(t, 12582912.0f);
  float r = __fsub_rn(x, __fmul_rn(n, 0.693359375f));
  r = __fsub_rn(r, __fmul_rn(n, -2.12194440e-4f));
  float p = 1.9875691500e-4f;
  p = __fadd_rn(__fmul_rn(p, r), 1.3981999507e-3f);
  p = __fadd_rn(__fmul_rn(p, r), 8.3334519073e-3f);
  p = __fadd_rn(__fmul_rn(p, r), 4.1665795894e-2f);
  p = __fadd_rn(__fmul_rn(p, r), 1.6666665459e-1f);
  p = __fadd_rn(__fmul_rn(p, r), 5.0000001201e-1f);
  p = __fadd_rn(__fadd_rn(__fmul_rn(__fmul_rn(p, r), r), r), 1.0f);
  return __fmul_rn(p, __int_as_float((__float_as_int(t) - 0x4B400000 + 127) << 23));
}

/* Subnormal results as the CPU keeps them: exp(x + 32 ln 2) * 2^-32 down
   to -104, then 0 (also -inf and NaN). */
__device__ __forceinline__ float ms_expf_dev(float x) {
  if (x >= -87.3365f) return ms_expf_core_dev(x > 88.3762f ? 88.3762f : x);
  if (x >= -104.0f) return __fmul_rn(ms_expf_core_dev(__fadd_rn(x, 22.18070977791825f)), 2.3283064365386963e-10f);
  return 0.0f;
}

/* The weight of a logit: exp((l - M) * S) with S = 1 / T, as the CPU. */
__device__ __forceinline__ float wgt(float l, float M, float S) {
  return ms_expf_dev(__fmul_rn(__fsub_rn(l, M), S));
}

/* The weight the draw's running sums add: 2^((l - M) * S2), S2 = S *
   log2(e) (dscale), by the hardware's exp2 with subnormal results
   flushed (one MUFU.EX2: __expf adds a range fix-up and a multiply).
   Within a few ulp of ms_expf_dev's exact weight (2 ulp, plus the
   argument's rounding, relative 2^-24 of it); weights under 2^-126 of the
   max's count as 0. The tile sums are the one pass that weighs every kept
   element, and ms_expf_dev's exact, unfused polynomial made that pass
   compute-bound (about 100 us for 256 rows of 128256 on an H200); the
   sums decide only where u * Z falls, so a draw differs from the CPU's
   only when u * Z lies within ~1e-7 of a boundary. Every use of a draw's
   weights (the tile sums, the walk in the drawn tile, the bins' finish)
   goes through wdraw, so they agree bit for bit. Selection (top_p's
   masses, min_p) and the distributions keep the exact weights. */
#ifndef MS_EMU_SHIM_H
__device__ __forceinline__ float ms_ex2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
#endif
__device__ __forceinline__ float dscale(float S) { return __fmul_rn(S, 1.44269504088896341f); }
__device__ __forceinline__ float wdraw(float l, float M, float S2) {
  return ms_ex2_ftz(__fmul_rn(__fsub_rn(l, M), S2));
}

template <class T> __device__ __forceinline__ T warp_sum(T v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

/* p points to global memory. Where a row's pointer reaches a function
   that is not inlined (row_stats), NVVM no longer knows that, and its
   16-byte loads were generic (LD.E.128, which resolve the address space
   at run time) instead of global ones (LDG.E.128, as in every other
   pass); this says so. */
#ifdef MS_EMU_SHIM_H
#define MS_ASSUME_GLOBAL(p) ((void)(p))
#define MS_ASSUME_SHARED(p) ((void)(p))
#else
#define MS_ASSUME_GLOBAL(p) __builtin_assume(__isGlobal(p))
#define MS_ASSUME_SHARED(p) __builtin_assume(__isShared(p))
#endif

/* Four floats read as one 16-byte load. */
struct alignas(16) F4 { float x, y, z, w; };

/* MS_L2PF (KB; 0, the default, is off): on sm_90 and newer the full-row
   passes (row_for, tile_pass) ask L2 for the bytes a block will read
   MS_L2PF KB further on, one cp.async.bulk.prefetch.L2 of a loop step's
   bytes a step, issued by thread 0. The loads that follow then wait on
   L2 rather than on memory, and the memory sees that many more bytes in
   flight without a register held for them: a pass that keeps U 16-byte
   loads a thread in flight (32 KB a block at U = 2 and 256 threads) may
   not cover the memory's latency at full bandwidth (session 18 measured
   ms_k_stats at 62% of DRAM bandwidth). A hint only: no result depends
   on it. Chosen among NVRTC's options (-DMS_L2PF=32, say, in
   MYSAMPLE_CUDA_NVRTC_OPTIONS), to time before it becomes a default. */
#ifndef MS_L2PF
#define MS_L2PF 0
#endif
/* Asks L2 for [p, p + bytes): p 16-byte aligned, bytes a positive
   multiple of 16. A no-op before sm_90; the emulator (which compiles the
   kernels with MS_L2PF set) checks those rules and that the range lies
   in one allocation. */
__device__ __forceinline__ void l2_prefetch(const void *p, u32 bytes) {
#if MS_L2PF > 0 && defined(MS_EMU_SHIM_H)
  ms_emu_l2_prefetch(p, bytes);
#elif MS_L2PF > 0 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("{\n\t.reg .u64 g;\n\tcvta.to.global.u64 g, %0;\n\tcp.async.bulk.prefetch.L2.global [g], %1;\n\t}"
               :: "l"(p), "r"(bytes) : "memory");
#else
  (void)p; (void)bytes;
#endif
}
/* The prefetch of a loop over 16-byte vectors q[0, n) that takes `step`
   of them a step: how far ahead it asks (whole steps, in vectors; once
   per loop: a division), then at the loop's start (j < 0) its first
   `ahead` vectors, and at the step that begins at j the step `ahead`
   after it. */
__device__ __forceinline__ i32 l2_ahead_of(i32 step) { return max(1, (MS_L2PF * 1024 / 16) / step) * step; }
__device__ __forceinline__ void l2_ahead(const F4 *q, i32 n, i32 j, i32 step, i32 ahead) {
  const i32 b = j < 0 ? 0 : j + ahead, e = min(n, j < 0 ? ahead : j + ahead + step);
  if (b < e) l2_prefetch(q + b, (u32)(e - b) * 16u);
}

/* Calls f(i, p[i]) for every i in [beg, end), split over the block's
   threads: the body of every full-row pass. The aligned middle is read
   with 16-byte loads, U of them issued before any is used, so each thread
   keeps U * 16 bytes in flight (a one-element stride loop keeps 4 and
   leaves the memory system idle); the unaligned head and the tail (under
   4 elements each) are read one by one. Which thread sees which element,
   and in which order, is unspecified: callers combine order-free
   (max, counts, integer sums) or key their results by id. ONE: f is
   written out once for a vector's four elements (a loop over them)
   rather than four times, for a body too large to copy: the loads in
   flight are the same. */
template <int U, bool ONE = false, class F>
__device__ __forceinline__ void row_for(const float *p, i32 beg, i32 end, F &&f) {
  const i32 tid = (i32)threadIdx.x, nt = (i32)blockDim.x;
  if (beg >= end) return;
  const i32 mis = (i32)(((unsigned long long)(p + beg) >> 2) & 3u);
  const i32 head = mis ? min(end - beg, 4 - mis) : 0;
  const i32 a = beg + head;
  const i32 n4 = (end - a) >> 2;
  const i32 rest = end - a - 4 * n4;   /* the tail, after the aligned middle */
  const F4 *q = (const F4 *)(p + a);
  MS_ASSUME_GLOBAL(q);
  const i32 ahead = MS_L2PF > 0 && tid == 0 ? l2_ahead_of(U * nt) : 0;
  if (MS_L2PF > 0 && tid == 0) l2_ahead(q, n4, -1, U * nt, ahead);
  for (i32 j = tid; j < n4; j += U * nt) {
    if (MS_L2PF > 0 && tid == 0) l2_ahead(q, n4, j, U * nt, ahead);
    F4 v[U];
#pragma unroll
    for (int u = 0; u < U; u++) if (j + u * nt < n4) v[u] = q[j + u * nt];
#pragma unroll
    for (int u = 0; u < U; u++) {
      if (j + u * nt < n4) {
        const i32 i = a + 4 * (j + u * nt);
        if (ONE) {
#pragma unroll 1
          for (int e = 0; e < 4; e++) f(i + e, e == 0 ? v[u].x : e == 1 ? v[u].y : e == 2 ? v[u].z : v[u].w);
        } else {
          f(i, v[u].x); f(i + 1, v[u].y); f(i + 2, v[u].z); f(i + 3, v[u].w);
        }
      }
    }
  }
  if (tid < head + rest) {
    const i32 i = tid < head ? beg + tid : a + 4 * n4 + (tid - head);
    f(i, p[i]);
  }
}

/* Block reductions: every thread of the block must call them, and all
   get the result. One shape for every type and operation: the warp's
   butterfly, the warps' values through shared memory, warp 0's butterfly
   (id: the operation's identity, for the lanes past the last warp). */
struct RedSum { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; } };
struct RedMax {
  __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
  template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return max(a, b); }
};
struct RedMin { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return min(a, b); } };
template <class T, class Op> __device__ MS_BLOCK_FN T bred(T v, T id) {
  __shared__ T sh[32];
  const Op op = Op();
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __syncthreads();
  if (lane == 0) sh[w] = v;
  __syncthreads();
  if (w == 0) {
    v = lane < nw ? sh[lane] : id;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) sh[0] = v;
  }
  __syncthreads();
  return sh[0];
}
__device__ __forceinline__ double bsum_d(double v) { return bred<double, RedSum>(v, 0.0); }
__device__ __forceinline__ u32 bsum_u(u32 v) { return bred<u32, RedSum>(v, 0u); }
__device__ __forceinline__ float bmax_f(float v) { return bred<float, RedMax>(v, ms_neg_inf()); }
__device__ __forceinline__ i32 bmin_i(i32 v) { return bred<i32, RedMin>(v, 0x7fffffff); }
__device__ __forceinline__ i32 bmax_i(i32 v) { return bred<i32, RedMax>(v, -1); }
__device__ __forceinline__ u32 bmin_u(u32 v) { return bred<u32, RedMin>(v, 0xffffffffu); }
__device__ __forceinline__ u32 bmax_u(u32 v) { return bred<u32, RedMax>(v, 0u); }
/* The block's OR of flag bits 1 and 2 (NaN, +Inf) in one reduction:
   their counts, in the two halves of a sum (at most 1024 threads). */
__device__ __forceinline__ i32 bflags(i32 fl) {
  const u32 s = bsum_u((u32)(fl & 1) | ((u32)(fl & 2) << 15));
  return ((s & 0xffffu) ? 1 : 0) | ((s >> 16) ? 2 : 0);
}

/* Exclusive prefix sum over the threads of the block, in thread order. */
template <class T> __device__ MS_BLOCK_FN T bscan_excl(T v, T *total) {
  __shared__ T sh[33];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = (blockDim.x + 31) >> 5;
  T incl = v;
  for (int o = 1; o < 32; o <<= 1) {
    T n = __shfl_up_sync(0xffffffffu, incl, o);
    if (lane >= o) incl += n;
  }
  __syncthreads();
  if (lane == 31) sh[w] = incl;
  __syncthreads();
  if (w == 0) {
    T s = lane < nw ? sh[lane] : (T)0;
    T si = s;
    for (int o = 1; o < 32; o <<= 1) {
      T n = __shfl_up_sync(0xffffffffu, si, o);
      if (lane >= o) si += n;
    }
    sh[lane] = si - s;               /* exclusive prefix of warp totals */
    if (lane == 31) sh[32] = si;     /* block total */
  }
  __syncthreads();
  T r = sh[w] + incl - v;
  *total = sh[32];
  return r;
}

/* ---- the pointwise stages ------------------------------------------------- */

/* x plus the bias entries of token i, one after another in the caller's
   order (the list is sorted by token, stably), as the CPU adds them; a
   logit at -inf (the model's, or an entry's) stays there, as on the CPU
   (+inf would make it NaN). */
__device__ float add_bias(const i32 *blob, const Row &R, i32 i, float x) {
  const i32 *tok = blob + R.bias_tok_off;
  const float *val = (const float *)(blob + R.bias_val_off);
  i32 lo = 0, hi = R.n_bias;   /* the first entry with token >= i */
  while (lo < hi) {
    i32 mid = (lo + hi) >> 1;
    if (tok[mid] < i) lo = mid + 1; else hi = mid;
  }
  for (; lo < R.n_bias && tok[lo] == i; lo++) if (x != ms_neg_inf()) x = __fadd_rn(x, val[lo]);
  return x;
}

/* A slot's seen bits, one per token: set where its counter (below) is
   not zero, a token of its prompt or output. They follow the n_slots
   counter rows of stride words in the same allocation, ceil(stride / 32)
   words a slot. The statistics read a row's 4-byte counter only where
   its bit is set: a penalised row's read was twice the row's bytes. */
__device__ __forceinline__ u32 *slot_seen(u64 seq_state, i32 n_slots, u64 stride, i32 slot) {
  return (u32 *)seq_state + (u64)n_slots * stride + (u64)slot * ((stride + 31u) >> 5);
}
#ifndef MS_SEEN_BITS
#define MS_SEEN_BITS 1   /* 0: every element of a penalised row reads its counter, to compare */
#endif
__device__ __forceinline__ bool seen_id(const u32 *seen, i32 i) { return !MS_SEEN_BITS || ((seen[i >> 5] >> (i & 31)) & 1u); }

/* Masks, logit bias and penalties of one logit (the stages before the
   temperature). vLLM: the allowed/bitmask/banned mask and min_tokens set
   -inf, logit_bias is added (clamped on the host), then repetition
   (prompt and output, once: l > 0 ? l / r : l * r), frequency
   (l -= f * count) and presence (l -= p when count > 0). */
/* The masks: whether id i passes them (ms_k_mask's bits of its row), and
   its logit x then: a forced token keeps its logit, or 0 where the model
   gave it none. */
__device__ __forceinline__ bool allowed_id(const u32 *bits, i32 i) { return (bits[i >> 5] >> (i & 31)) & 1u; }
__device__ __forceinline__ float forced_or(i32 forced, i32 i, float x) {
  return i == forced && !(x > ms_neg_inf() && x < ms_pos_inf()) ? 0.0f : x;
}
__device__ __noinline__ float pointwise(const Args &A, const Row &R, i32 r, i32 i, float x) {
  const u64 wbase = (u64)r * (u64)A.words + (u64)(i >> 5);
  const int joint = (R.flags & F_JOINT) != 0;
  int biased = !(R.flags & F_BIAS);
  if (R.flags & F_MASK) {
    const u32 *bits = (const u32 *)A.allow_bits + (u64)r * (u64)A.words;
    MS_ASSUME_GLOBAL(bits);
    if (!allowed_id(bits, i)) return ms_neg_inf();
    x = forced_or(R.forced, i, x);
  }
  /* the masked stay -inf whatever the order; bias and penalties do not
     commute: vLLM and HF add the bias first, SGLang last */
  if (!biased && !joint) {
    u32 w = ((const u32 *)A.bias_bits)[wbase];
    if ((w >> (i & 31)) & 1u) x = add_bias((const i32 *)A.blob, R, i, x);
    biased = 1;
  }
  if ((R.flags & F_PEN) && seen_id(slot_seen(A.seq_state, A.n_slots, A.seq_stride, R.slot), i)) {
    u32 s = ((const u32 *)A.seq_state)[(u64)R.slot * A.seq_stride + (u64)i];
    u32 c = s & 0x7fffffffu;
    /* vLLM multiplies positive logits by 1/r (float32), HF and SGLang
       divide by r; SGLang counts the output only, the others the prompt too */
    if ((c != 0u || ((s >> 31) && !joint)) && R.repetition != 1.0f)
      x = x > 0.0f ? ((R.flags & F_HF) ? x / R.repetition : x * (1.0f / R.repetition)) : x * R.repetition;
    if (c != 0u) {
      /* two roundings, as the CPU: a plain `x -= f * c` is fused into one
         FMA by NVRTC (-fmad=true), which moves the logit by an ulp */
      x = __fsub_rn(x, __fmul_rn(R.frequency, (float)c));
      x = __fsub_rn(x, R.presence);
    }
  }
  if (R.flags & F_LLPEN) {
    /* llama.cpp: l <= 0 ? l * r : l / r, then l -= c * freq + present,
       c the token's count in the window */
    const i32 *pl = (const i32 *)A.blob + R.ll_pen_off;
    i32 lo = 0, hi = R.ll_n_pen;
    while (lo < hi) {
      const i32 mid = (lo + hi) >> 1;
      if (pl[2 * mid] < i) lo = mid + 1; else hi = mid;
    }
    if (lo < R.ll_n_pen && pl[2 * lo] == i && x != ms_neg_inf()) {   /* (-inf stays: ms__chain_pen) */
      x = x <= 0.0f ? __fmul_rn(x, R.repetition) : __fdiv_rn(x, R.repetition);
      x = __fsub_rn(x, __fadd_rn(__fmul_rn((float)pl[2 * lo + 1], R.frequency), R.presence));
    }
  }
  if (!biased) {
    u32 w = ((const u32 *)A.bias_bits)[wbase];
    if ((w >> (i & 31)) & 1u) x = add_bias((const i32 *)A.blob, R, i, x);
  }
  if ((R.flags & F_DECAY) && i == R.eos) {
    /* HF ExponentialDecayLengthPenalty, after the penalties: EOS grows by
       |l| * (f^k - 1), k output tokens past the start (finite logits only) */
    i32 k = ((const i32 *)A.seq_len)[R.slot] - R.decay_start;
    if (k > 0 && x == x && x != ms_pos_inf() && x != ms_neg_inf()) {
      /* f^k by squaring in double (the CPU calls pow; both round to the
         same float but where a double ulp decides; libdevice's pow would
         add a tenth of a second to the cold compile) */
      double f = (double)R.decay_factor, fk = 1.0;
      for (; k; k >>= 1, f *= f) if (k & 1) fk *= f;
      x = __fadd_rn(x, __fmul_rn(fabsf(x), (float)(fk - 1.0)));
    }
  }
  return x;
}

/* ---- top_p by bins (F_TOPP_BINS) ---------------------------------------------
   Two reads of the row after the statistics instead of the radix path's
   four (three passes, then the tile sums), and neither weighs elements
   into shared memory (the radix path's first pass does, with the exact
   exp and two shared atomics each, into a few dozen hot bins):
   P_PBIN counts the keys >= lower in MS_PB_NB bins of the scaled
   distance below the max, 1/MS_PB_BW wide (the last bin takes all 16 or
   more below): one shared atomic add an element, no exp. Every element
   of a bin weighs within known bounds, so the last block bounds each
   bin's mass above and p * Z, and finds the bins that may hold the
   threshold (pb_window); their key range [pk_lo, pk_hi) holds a few
   thousand keys of a smooth 128k row (about 2200 at sigma 1 and top_p
   0.9). More than MS_PCAND: the row takes the radix passes.
   P_PGATHER: P_SUMS's tile sums of the keys >= pk_hi (kept whatever the
   threshold), the range's keys listed (A.pcand), and the exact integer
   masses (fxw: the CPU's weights in 2^-44 units) of the keys >= lower (Z) and of
   those >= pk_hi. Its last block selects the threshold exactly among the
   listed keys (pgather_finish: the radix passes' rule on the list), adds
   the kept ones to their tiles and draws an F_END row. Should the exact
   masses put the threshold outside the range (the bounds rule it out),
   the row takes the radix passes too. Compiled in only for an ms_cuda
   that asks (-DMS_TOPP_BINS=1); the emulator always has it. */
#if defined(MS_TOPP_BINS) || !defined(MS_UNIT)
#define MS_BINS_ON 1
#define MS_PB_NB 4096     /* bins (u32 counts: 16 KB of shared memory) */
#define MS_PB_BW 256.0f   /* bins per unit of scaled logit */
#define MS_PCAND 4096     /* listed keys per row: A.pcand holds MS_PCAND keys, then their ids */
static_assert(MS_PB_NB % MS_ST == 0 && MS_PB_NB * 4 == MS_BINS * 8, "P_PBIN's bins: Sel.hist and the pass's shared scratch");
/* The bin of logit l <= M: MS_PB_NB - 1 - floor((M - l) * S * MS_PB_BW),
   clamped at 0 (larger values, higher bins, as the radix's). (M - l) * S
   rounds exactly as wgt's (l - M) * S (negated) and * MS_PB_BW is exact,
   so the argument of an element's weight lies inside its bin's interval. */
__device__ __forceinline__ i32 topp_bin(float l, float M, float S) {
  const float x = fminf(__fmul_rn(__fmul_rn(__fsub_rn(M, l), S), MS_PB_BW), (float)(MS_PB_NB - 1));
  return MS_PB_NB - 1 - (i32)x;
}
/* The smallest key in [lo, hi] whose bin is >= b (hi's bin must be). */
__device__ __noinline__ u32 topp_key(u32 lo, u32 hi, i32 b, float M, float S) {
  while (lo < hi) {
    const u32 mid = lo + ((hi - lo) >> 1);
    if (topp_bin(unkey(mid), M, S) >= b) hi = mid; else lo = mid + 1u;
  }
  return lo;
}
/* The last block of P_PBIN, or of ms_k_pbstats (F_PB_STATS), on the row's
   counts c[MS_PB_NB] (shared): the bins that may hold top_p's threshold.
   The threshold's bin is the lowest non-empty bin whose mass strictly
   above is < p * Z (find_bin's rule). Bin b counts the elements o =
   MS_PB_NB - 1 - b bins below the anchor (the row's max in P_PBIN, the
   statistics' sample max a in F_PB_STATS, d = (M - a) * S scaled logits
   below the max): their weights' arguments lie in [d + o/W, d + (o+1)/W]
   (W = MS_PB_BW; no lower end for the last bin), within a relative 1e-6
   (exactly when d = 0; else the rounding of a - l and M - l, both within
   2^-24 relative). Above them, the super-bin MS_PB_NB: n_top
   elements above the anchor whose exact integer mass is z_top. An
   element's integer mass (2^-44 units) is its weight within 1e-5 (the
   CPU's expf) and 3e-14 (the rounding to 2^-44). So bin b surely
   qualifies when its most mass above is < p * the least Z, and surely not
   when its least is >= p * the most Z: the threshold lies in [*b_lo,
   *b_hi] (the lowest surely qualifying bin, one above the highest surely
   not). Returns how many keys those bins hold; 0 when nothing surely
   qualifies (top_p <= 0). Every thread calls. A call, its loops not
   unrolled (once a row, in a last block): inlined and unrolled it made
   its programs compile about 0.35 s longer (one core). */
__device__ __noinline__ u32 pb_window(const u32 *c, float top_p, double d, u32 n_top, double z_top, i32 *b_lo, i32 *b_hi) {
  __shared__ i32 s_lo, s_hi;
  const i32 per = MS_PB_NB / (i32)blockDim.x, first = (i32)threadIdx.x * per;   /* bins from the top */
  const double rho = 1e-6, up = 1.0 + 1e-5, down = 1.0 - 1e-5, W = (double)MS_PB_BW;
  /* a bin's most and least weight, stepping down one bin a time by
     e^-((1 -+ rho) / W) (W = 256) */
  static_assert(MS_PB_BW == 256.0f, "pb_window's steps");
  const double step_hi = 0.9961013733611385, step_lo = 0.9961013655790966;
  const double wh0 = exp(-(d + (double)first / W) * (1.0 - rho)), wl0 = exp(-(d + (double)(first + 1) / W) * (1.0 + rho));
  double lo_s = 0.0, hi_s = 0.0, wh = wh0, wl = wl0;
#pragma unroll 1
  for (i32 j = 0; j < per; j++, wh *= step_hi, wl *= step_lo) {
    const i32 o = first + j;
    const double n = (double)c[MS_PB_NB - 1 - o];
    hi_s += n * (wh * up + 3e-14);
    lo_s += n * (o == MS_PB_NB - 1 ? 0.0 : fmax(wl * down - 3e-14, 0.0));
  }
  double z_lo, z_hi;
  double a_lo = bscan_excl(lo_s, &z_lo) + z_top;
  double a_hi = bscan_excl(hi_s, &z_hi) + z_top;
  z_lo += z_top; z_hi += z_top;
  const double t_lo = (double)top_p * z_lo, t_hi = (double)top_p * z_hi;
  /* the super-bin: nothing above it */
  if (threadIdx.x == 0) { s_lo = n_top > 0u && 0.0 >= t_hi ? MS_PB_NB : -1; s_hi = n_top > 0u && 0.0 < t_lo ? MS_PB_NB : MS_PB_NB + 1; }
  __syncthreads();
  wh = wh0; wl = wl0;
#pragma unroll 1
  for (i32 j = 0; j < per; j++, wh *= step_hi, wl *= step_lo) {
    const i32 o = first + j, b = MS_PB_NB - 1 - o;
    const double n = (double)c[b];
    if (n > 0.0) {
      if (a_hi < t_lo) atomicMin(&s_hi, b);
      if (a_lo >= t_hi) atomicMax(&s_lo, b);
    }
    a_hi += n * (wh * up + 3e-14);
    a_lo += n * (o == MS_PB_NB - 1 ? 0.0 : fmax(wl * down - 3e-14, 0.0));
  }
  __syncthreads();
  const i32 lo = s_lo + 1, hi = s_hi;
  u32 n = 0u;
#pragma unroll 1
  for (i32 j = 0; j < per; j++) { const i32 b = MS_PB_NB - 1 - (first + j); if (b >= lo && b <= hi) n += c[b]; }
  n = bsum_u(n);
  if (lo <= MS_PB_NB && hi >= MS_PB_NB) n += n_top;
  *b_lo = lo; *b_hi = hi;
  return hi <= MS_PB_NB && lo <= hi ? n : 0u;
}
/* F_PB_STATS: the statistics (ms_k_pbstats) count the bins as they read the row, so top_p
   by bins reads it twice in all (the statistics, P_PGATHER), not three
   times. The bins are relative to an anchor every block of the row knows
   before it reads: the largest finite logit a of a sample of the row
   (pb_sample: 128 runs of 8 ids spread over it, the same in every block).
   The keys at or below a go to the bins (topp_bin(l, a, S)); the few above
   it (about V / 1024 of a row whatever its distribution, the sample being
   1024 of its ids) are listed in A.pcand, and the last block weighs them
   exactly (their super-bin in pb_window). More than MS_PB_ABOVE above a
   in one block, or MS_PCAND in the row: the radix passes decide. */
#define MS_PB_ABOVE 1024  /* keys above the anchor a block lists (shared) */
struct PbStats { u32 *c, *above, *n_above; float a, S, lower_f; };
/* Id j (0..3) of thread t's share of the anchor's sample of a row of V
   ids: for V >= 1024, thread pairs read runs of 8 ids (one 32-byte
   sector) at 128 places spread over the row; else ids t + 256 j; -1: none. */
static_assert(MS_ST == 256, "pb_sample: 128 pairs of threads");
__device__ __forceinline__ i32 pb_sample(i32 t, i32 j, i32 V) {
  if (V < 1024) { const i32 i = t + MS_ST * j; return i < V ? i : -1; }
  return (i32)(((long long)(t >> 1) * (long long)(V - 8)) / 127) + (t & 1) * 4 + j;
}
#else
#define MS_BINS_ON 0
#endif

/* F_KFAST's lists: each thread of ms_k_stats keeps the four largest
   finite keys it has seen, with their ids, in its own column of shared
   arrays (entry j of thread t at j * MS_ST + t: no bank conflicts), so a
   block holds 1024 and a row G x 1024 from one read; and, in registers,
   the fifth largest key, the largest it dropped (row MS_TOP4 of tk at the
   end: a thread that held five of the row's k largest shows it). Empty
   entries hold the key of -inf. */
#define MS_TOP4 4
struct Top4 { u32 k4, k5; float f5; };   /* the fourth's and fifth's keys, the fifth's float */
__device__ __forceinline__ void top4_init(u32 *tk, i32 *ti, Top4 *q) {
#pragma unroll
  for (int j = 0; j < MS_TOP4; j++) { tk[j * MS_ST + threadIdx.x] = MS_KEY_NEG_INF; ti[j * MS_ST + threadIdx.x] = -1; }
  q->k4 = q->k5 = MS_KEY_NEG_INF;
  q->f5 = ms_neg_inf();
}
/* Element i with logit l >= q.f5: placed by key after equal keys (ties
   keep the first seen), the fourth falling to fifth; or, at most the
   fourth's key, the new fifth. -inf and keys equal to the fifth's are not
   taken (the fifth bounds them). Returns the new state. A call, taken by
   the elements at or above the fifth only: inlined, its eight copies in
   the read loop made the loop's code a third larger, and by reference its
   state went to local memory (a load an element). */
__device__ __noinline__ Top4 top4_put(u32 *tk, i32 *ti, float l, i32 i, Top4 q) {
  const u32 key = fkey(l);
  if (key <= q.k5) return q;
  if (key <= q.k4) { q.k5 = key; q.f5 = l; return q; }
  const i32 t = (i32)threadIdx.x;
  q.k5 = q.k4;
  i32 j = MS_TOP4 - 1;
  for (; j > 0 && key > tk[(j - 1) * MS_ST + t]; j--) {
    tk[j * MS_ST + t] = tk[(j - 1) * MS_ST + t];
    ti[j * MS_ST + t] = ti[(j - 1) * MS_ST + t];
  }
  tk[j * MS_ST + t] = key;
  ti[j * MS_ST + t] = i;
  q.k4 = tk[(MS_TOP4 - 1) * MS_ST + t];
  q.f5 = unkey(q.k5);
  return q;
}

#ifndef MS_MASK_INLINE
#define MS_MASK_INLINE 1
#endif
/* Statistics of elements [beg, end) of row r by the whole block: the max of
   the processed logits and its lowest index, NaN/+Inf flags, and the raw
   log-sum-exp (online) when raw logprobs are asked for. Writes the
   processed logits to the work row for rows that need it, and, unless tk
   is null (F_KFAST), keeps each thread's four largest finite keys and
   their ids (top4_put). The result is valid in thread 0. */
__device__ __noinline__ Part row_stats(const Args &A, const Row &R, i32 r, i32 beg, i32 end, u32 *tk, i32 *ti) {
  const float *raw = (const float *)A.logits + (u64)r * A.stride;
  float *work = (float *)A.work + (u64)r * (u64)A.vocab;
  const i32 flags = R.flags;   /* a register: the work-row stores could alias R */
  const int pw = flags & (F_MASK | F_BIAS | F_PEN | F_DECAY | F_LLPEN);
  const int lse = flags & F_RAW_LSE, store = flags & F_WORK;
  float m = ms_neg_inf(), mr = ms_neg_inf(), sr = 0.0f;
  i32 am = 0x7fffffff, fl = 0;
  /* F_KFAST: this thread's four largest finite keys so far, column
     threadIdx.x of tk / ti, largest first, and the fifth: an element
     below the fifth costs one comparison */
  Top4 q;
  if (tk) top4_init(tk, ti, &q);
  else { q.k4 = q.k5 = MS_KEY_NEG_INF; q.f5 = ms_neg_inf(); }
  /* the lowest id of the max: a thread's ids need not rise (row_for) */
  if (!pw && !lse && !store) {
    /* each test a compare and a branch rarely taken: NaN or +Inf (not
       below +Inf: 1 for NaN, 2 for +Inf), a new max or its tie */
    if (tk) {
      /* two loads in flight, not four: the lists' registers (at four the
         loop spilled its pointers every iteration) */
      row_for<2>(raw, beg, end, [&](i32 i, float x) {
        if (!(x < ms_pos_inf())) fl |= x == x ? 2 : 1;
        if (x >= m && (x > m || i < am)) { m = x; am = i; }
        if (x >= q.f5) q = top4_put(tk, ti, x, i, q);
      });
    } else {
      row_for<4>(raw, beg, end, [&](i32 i, float x) {
        if (!(x < ms_pos_inf())) fl |= x == x ? 2 : 1;
        if (x >= m && (x > m || i < am)) { m = x; am = i; }
      });
    }
  } else {
    /* masks, bias, penalties (a call per element) or the raw log-sum-exp.
       As the CPU: +Inf counts where it survives the masks (a processed
       +Inf); NaN anywhere in the raw row, except that a row with allowed
       ids, or one a budget forces, is only those ids (the CPU reads no
       others) */
    const int raw_nan = !(flags & F_ALLOWED) && R.forced < 0;
    /* the masks (min_tokens, bans, bad words, allowed ids, a bitmask, a
       forced token) inline, and pointwise's call only for the elements a
       bias, a penalty or the length decay touches: a bit of the row's bias
       bits (with llama.cpp's penalty window: ms_k_mask), of the slot's
       seen bits (slot_seen: a token of its sequence), or EOS
       (-DMS_MASK_INLINE=0: every element calls, to compare) */
    const int inl = MS_MASK_INLINE;
    const u32 *bits = (const u32 *)A.allow_bits + (u64)r * (u64)A.words;
    const u32 *bbits = (const u32 *)A.bias_bits + (u64)r * (u64)A.words;
    /* (a row without penalties has no slot to point at: seen is then read never) */
    const u32 *seen = (flags & F_PEN) ? slot_seen(A.seq_state, A.n_slots, A.seq_stride, R.slot) : bbits;
    const int mask = flags & F_MASK, bias = flags & (F_BIAS | F_LLPEN), pen = flags & F_PEN;
    const i32 forced = R.forced, eos = (flags & F_DECAY) ? R.eos : -1;
    MS_ASSUME_GLOBAL(bits);
    MS_ASSUME_GLOBAL(bbits);
    MS_ASSUME_GLOBAL(seen);
    MS_ASSUME_GLOBAL(work);
    /* (ONE: this body written out once in the loop, not four times,
       made ms_k_stats's program compile about 0.1 s faster) */
    row_for<1, true>(raw, beg, end, [&](i32 i, float x) {
      if (lse && x == x && x < ms_pos_inf()) {
        /* one exp an element (its code copied once per unrolled element,
           not twice): e^(-|x - mr|), mr - x being -(x - mr) exactly */
        const int up = x > mr;
        const float e = ms_expf_dev(up ? __fsub_rn(mr, x) : __fsub_rn(x, mr));
        sr = up ? __fadd_rn(__fmul_rn(sr, e), 1.0f) : __fadd_rn(sr, e);
        if (up) mr = x;
      }
      const bool touched = !inl || (bias && allowed_id(bbits, i)) || (pen && seen_id(seen, i)) || i == eos;
      const float l = !pw ? x : touched ? pointwise(A, R, r, i, x) : !mask ? x : allowed_id(bits, i) ? forced_or(forced, i, x) : ms_neg_inf();
      if (l != l || (raw_nan && x != x)) fl |= 1;
      else if (l == ms_pos_inf()) fl |= 2;
      if (store) work[i] = l;
      if (l > m || (l == m && i < am)) { m = l; am = i; }
      if (tk && l >= q.f5) q = top4_put(tk, ti, l, i, q);
    });
  }
  if (tk) tk[MS_TOP4 * MS_ST + threadIdx.x] = q.k5;
  Part p;
  p.m = bmax_f(m);
  p.am = bmin_i(m == p.m ? am : 0x7fffffff);
  p.fl = bflags(fl);
  p.mr = bmax_f(mr);
  double s = (mr > ms_neg_inf()) ? (double)sr * (double)ms_expf_dev(__fsub_rn(mr, p.mr)) : 0.0;
  p.sr = (float)bsum_d(s);
  p.pad = 0;
  return p;
}

#if MS_BINS_ON && MS_IN_UNIT(8)
/* row_stats of a row read as it is (no raw log-sum-exp) that counts
   top_p's bins as it goes (F_PB_STATS, ms_k_pbstats): pb->c (zero,
   shared) gets the counts of the keys >= lower at or below the anchor,
   pb->above the keys above it (*pb->n_above of them; the first
   MS_PB_ABOVE kept). */
__device__ __noinline__ Part row_stats_pb(const Args &A, i32 r, i32 beg, i32 end, const PbStats *pb) {
  const float *raw = (const float *)A.logits + (u64)r * A.stride;
  float m = ms_neg_inf();
  i32 am = 0x7fffffff, fl = 0;
  const float a = pb->a, S = pb->S, lower_f = pb->lower_f;
  u32 *const c = pb->c, *const above = pb->above, *const n_above = pb->n_above;
  MS_ASSUME_SHARED(c); MS_ASSUME_SHARED(above); MS_ASSUME_SHARED(n_above);   /* (shared atomics, not generic) */
  u32 far = 0u;   /* the last bin's count (most of a peaked row), in registers */
  /* two loads in flight, as the lists' loop in row_stats: at four it spilled */
  row_for<2>(raw, beg, end, [&](i32 i, float x) {
    if (!(x < ms_pos_inf())) fl |= x == x ? 2 : 1;
    if (x >= m && (x > m || i < am)) { m = x; am = i; }
    if (x > a) {
      const u32 at = atomicAdd(n_above, 1u);
      if (at < MS_PB_ABOVE) above[at] = fkey(x);
    } else if (x >= lower_f) {
      const i32 b = topp_bin(x, a, S);
      if (b == 0) far++; else atomicAdd(&c[b], 1u);
    }
  });
  far = bsum_u(far);
  if (threadIdx.x == 0) c[0] += far;
  Part p;
  p.m = bmax_f(m);
  p.am = bmin_i(m == p.m ? am : 0x7fffffff);
  p.fl = bflags(fl);
  p.mr = ms_neg_inf(); p.sr = 0.0f; p.pad = 0;
  return p;
}
#endif

/* A partial written by another block of this kernel, read past L1. */
__device__ Part part_ld(const Part *p) {
  const volatile i32 *w = (const volatile i32 *)p;
  Part q;
  q.m = __int_as_float(w[0]); q.am = w[1]; q.mr = __int_as_float(w[2]);
  q.sr = __int_as_float(w[3]); q.fl = w[4]; q.pad = 0;
  return q;
}

/* The statistics of a whole row from the partials of its n chunks (n <=
   the block's threads; every thread calls, all get the result): the max
   with its lowest index, the flags, the raw log-sum-exp rescaled to the
   largest max. Thread j reads partial j, so the n loads are in flight
   together (one thread walking them paid n round trips). */
__device__ Part combine_parts(const Part *pp, i32 n) {
  const int mine = (i32)threadIdx.x < n;
  Part q;
  if (mine) q = part_ld(pp + threadIdx.x);
  else { q.m = ms_neg_inf(); q.am = 0x7fffffff; q.mr = ms_neg_inf(); q.sr = 0.0f; q.fl = 0; q.pad = 0; }
  Part c;
  c.m = bmax_f(q.m);
  c.am = bmin_i(mine && q.m == c.m ? q.am : 0x7fffffff);
  c.fl = bflags(q.fl);
  c.mr = bmax_f(q.mr);
  c.sr = (float)bsum_d(q.mr > ms_neg_inf() ? (double)q.sr * (double)ms_expf_dev(__fsub_rn(q.mr, c.mr)) : 0.0);
  c.pad = 0;
  return c;
}

/* The row's result code from its statistics (0: it can be sampled). */
__device__ __forceinline__ i32 part_status(const Part &p) {
  if (p.fl & 1) return ST_NAN;
  if (p.fl & 2) return ST_INF;
  if (!(p.m > ms_neg_inf())) return ST_ALL_MASKED;
  return 0;
}

/* The draw's tiles: 32 * E consecutive ids, E a multiple of 8 (whole
   128-id groups, tile_pass reading a lane's four ids at once; two groups
   at least, so a warp's sums cost under 2 instructions an id) from the
   vocabulary alone, at most MS_MAXT tiles, so a row's tiles, and the
   double sums over them, are the same whether the row is split over
   blocks or not (split chunks are whole tiles). impl_launch.c sizes the
   chunks by the same formula. */
__device__ __forceinline__ i32 tile_e(i32 V) { return 8 * max(1, (V + 256 * MS_MAXT - 1) / (256 * MS_MAXT)); }


/* Whether id i with key k is kept: above the threshold, or on it up to
   the cut (cut = 0x7fffffff unless an SGLang cut falls inside a tie). */
__device__ __forceinline__ bool kept_at(u32 k, i32 i, u32 theta, i32 cut) {
  return k > theta || (k == theta && i <= cut);
}

/* min_p's threshold without reading the row: drop prob < min_p * max_prob,
   i.e. weight < min_p, and the weight of a finite logit l <= M is
   non-decreasing in l (l - M and * S round monotonically, and ms_expf_dev
   was checked non-increasing over every float from 0 down to -105:
   `make exp-monotone`), so
   the kept logits are those with a key >= the smallest key whose weight
   is >= min_p: a binary search over keys, 32 weights at most. Returns
   0xffffffff when not even the max qualifies (min_p > 1). */
__device__ u32 minp_key(float M, float S, float min_p) {
  u32 lo = MS_KEY_NEG_INF + 1u, hi = fkey(M);
  if (!(wgt(M, M, S) >= min_p)) return 0xffffffffu;
  while (lo < hi) {
    const u32 mid = lo + ((hi - lo) >> 1);
    if (wgt(unkey(mid), M, S) >= min_p) hi = mid; else lo = mid + 1u;
  }
  return lo;
}

/* The sums over a warp of four values a lane, s[u] summed into lane 8u
   (u = 0..3): two butterfly steps that halve the values a lane holds,
   then three on one; 6 double shuffles where four warp_sum took 20. The
   order is fixed (a + b and b + a are the same bits), so the sums do not
   depend on which kernel or block computes them. */
template <class T> __device__ __forceinline__ T warp_sum4(const T s[4]) {
  const i32 lane = (i32)threadIdx.x & 31;
  const bool h16 = (lane & 16) != 0, h8 = (lane & 8) != 0;
  T a0 = h16 ? s[2] : s[0], a1 = h16 ? s[3] : s[1];
  const T b0 = h16 ? s[0] : s[2], b1 = h16 ? s[1] : s[3];
  a0 += __shfl_xor_sync(0xffffffffu, b0, 16);
  a1 += __shfl_xor_sync(0xffffffffu, b1, 16);
  T c = h8 ? a1 : a0;
  const T d = h8 ? a0 : a1;
  c += __shfl_xor_sync(0xffffffffu, d, 8);
  for (int o = 4; o > 0; o >>= 1) c += __shfl_xor_sync(0xffffffffu, c, o);
  return c;
}

/* Ids i .. i + 3 of the row (i a multiple of 4), -inf past V: one
   16-byte load where the row is 16-byte aligned and the four are inside
   it, else four loads. */
__device__ __forceinline__ F4 ld4(const float *src, i32 i, i32 V, bool vec) {
  if (vec && i + 4 <= V) return *(const F4 *)(src + i);
  F4 v;
  v.x = i < V ? src[i] : ms_neg_inf();
  v.y = i + 1 < V ? src[i + 1] : ms_neg_inf();
  v.z = i + 2 < V ? src[i + 2] : ms_neg_inf();
  v.w = i + 3 < V ? src[i + 3] : ms_neg_inf();
  return v;
}

/* A pass over the draw's tiles t in [t_beg, t_end), a warp per tile, NT
   (2 or 4) tiles at a time (NT 16-byte loads in flight a lane; 2 where
   the weighing needs the registers): a tile is E / 4
   groups of 128 ids, lane l takes ids 4l .. 4l + 3 of each group,
   weigh(uniform, v, i, th) returns their part of the tile's sum (type T)
   and the warp adds the lanes' (warp_sum4), so a tile's sum does not
   depend on which kernel or block computes it; put(t, sum) runs in one
   lane per tile. weigh sees every element (-inf past the row's end).
   uniform (Flag<true>): the NT tiles are whole, inside the row and on
   one side of cut (all but a chunk's last few), and th is the threshold
   of every id there: thf up to cut, thu past it. Otherwise ids past V
   read -inf and the threshold is per id. */
template <bool B> struct Flag { static constexpr bool on = B; };
template <class T, int NT, class W, class P>
__device__ __forceinline__ void tile_pass(const float *src, i32 V, i32 t_beg, i32 t_end, i32 E, i32 cut, float thf,
                                          float thu, W &&weigh, P &&put) {
  static_assert(NT == 2 || NT == 4, "tile_pass: 2 or 4 tiles at a time");
  const i32 lane = (i32)threadIdx.x & 31, nw = (i32)blockDim.x >> 5, TILE = 32 * E;
  const bool vec = ((unsigned long long)src & 15u) == 0u;
  /* (the prefetch: the block's tiles as 16-byte vectors, NT * nw tiles a step; thread 0 takes each step's first tile) */
  const bool pf = MS_L2PF > 0 && vec && threadIdx.x == 0 && t_beg < t_end;
  const F4 *pq = (const F4 *)(src + (long long)t_beg * TILE);
  const i32 pn = (i32)((min((long long)t_end * TILE, (long long)V) - (long long)t_beg * TILE) >> 2), pstep = NT * nw * (TILE >> 2);
  const i32 pahead = pf ? l2_ahead_of(pstep) : 0;
  if (pf) l2_ahead(pq, pn, -1, pstep, pahead);
  for (i32 t0 = t_beg + ((i32)threadIdx.x >> 5); t0 < t_end; t0 += NT * nw) {
    if (pf) l2_ahead(pq, pn, (t0 - t_beg) * (TILE >> 2), pstep, pahead);
    T s[4] = { 0, 0, 0, 0 };   /* (NT = 2: the last two stay 0) */
    const i32 t3 = t0 + (NT - 1) * nw;
    const bool whole = vec && t3 < t_end && (t3 + 1) * TILE <= V && ((t3 + 1) * TILE - 1 <= cut || t0 * TILE > cut);
    const float th = t0 * TILE > cut ? thu : thf;
    for (i32 g = 0; g < TILE; g += 128) {
      const i32 i0 = t0 * TILE + g + 4 * lane;
      F4 v[NT];
      if (whole) {
#pragma unroll
        for (int u = 0; u < NT; u++) v[u] = *(const F4 *)(src + i0 + u * nw * TILE);
#pragma unroll
        for (int u = 0; u < NT; u++) s[u] += weigh(Flag<true>(), v[u], i0 + u * nw * TILE, th);
      } else {
#pragma unroll
        for (int u = 0; u < NT; u++) v[u] = ld4(src, t0 + u * nw < t_end ? i0 + u * nw * TILE : V, V, vec);
#pragma unroll
        for (int u = 0; u < NT; u++) s[u] += weigh(Flag<false>(), v[u], i0 + u * nw * TILE, th);
      }
    }
    const T sum = warp_sum4(s);
    const i32 u = lane >> 3, t = t0 + u * nw;
    if ((lane & 7) == 0 && u < NT && t < t_end) put(t, sum);
  }
}

/* The kept set of a threshold key theta and a cut (kept_at) as float
   thresholds: l >= *thf for ids up to cut, l >= *thu (the next float up:
   l > thf) past it. Keys order the non-NaN floats as < does, a theta
   past +inf's key (a NaN here) keeps nothing, and -inf is never kept. */
__device__ __forceinline__ void kept_floats(u32 theta, float *thf, float *thu) {
  const u32 k = max(theta, MS_KEY_NEG_INF + 1u);
  *thf = unkey(k);
  *thu = unkey(k + 1u);   /* (past 0xffffffff: 0, a NaN) */
}

/* P_SUMS's weighing (tile_pass): the kept weight (wdraw) of the four ids,
   added in float, in order. (Functors, not generic lambdas: NVRTC takes
   those for host code.) */
struct SumsWeigh {
  float M, S2, thf, thu;
  i32 cut;
  template <bool U> __device__ __forceinline__ double operator()(Flag<U>, const F4 &v, i32 i, float th) const {
    const float l4[4] = { v.x, v.y, v.z, v.w };
    float a = 0.0f;
#pragma unroll
    for (int c = 0; c < 4; c++) {
      const bool k = l4[c] >= (U ? th : i + c <= cut ? thf : thu);
      a = __fadd_rn(a, k ? wdraw(l4[c], M, S2) : 0.0f);
    }
    return (double)a;
  }
};
/* P_SUMS: the kept weight of each tile. */
template <class P>
__device__ __forceinline__ void tile_sums(const float *src, i32 V, i32 t_beg, i32 t_end, i32 E, u32 theta, i32 cut,
                                          float M, float S, P &&put) {
  SumsWeigh w;
  w.M = M; w.S2 = dscale(S); w.cut = cut;
  kept_floats(theta, &w.thf, &w.thu);
  tile_pass<double, 4>(src, V, t_beg, t_end, E, cut, w.thf, w.thu, w, put);
}

/* Mass histograms: a weight in [0, 1] as an integer count of 2^-44, held
   per bin in two 32-bit words added with the native 32-bit atomics (a
   double atomicAdd in shared memory is a compare-and-swap loop, and the
   first radix pass of a smooth row sends most of a warp to a few bins).
   Integer sums are exact in any order; weights under 2^-45 count as 0
   (their sum over a whole row stays under 4e-9, the largest weight is 1).
   Warp-aggregating the adds (__match_any_sync, __reduce_add_sync) was
   slower on an H200: see BENCHMARKS.md. */
#define MS_FX 17592186044416.0   /* 2^44 */
/* The integer mass of logit l: its exact weight (wgt's, the CPU's) in
   2^-44 units, rounded to nearest (even). A weight under e^-32 is under
   2^-45 and counts 0 without its exp (so ms_expf_dev's subnormal path is
   never needed), and w * 2^44 is exact in float, so one conversion
   rounds it. `cuda-emu:fxw` in `make test` compares it with
   llrint(wgt * 2^44) in double over every 37th float in [-40, 0]. */
__device__ __forceinline__ u64 fxw(float l, float M, float S) {
  const float x = __fmul_rn(__fsub_rn(l, M), S);
  const float w = fminf(ms_expf_core_dev(fmaxf(x, -32.0f)), 1.0f);
  return x >= -32.0f ? __float2ull_rn(__fmul_rn(w, 17592186044416.0f)) : 0ull;
}
__device__ __forceinline__ void fx_add(u32 *lo, u32 *hi, i32 b, u64 f) {   /* f <= 2^44 */
  const u32 fl = (u32)f;
  u32 up = (u32)(f >> 32);
  if (fl) { const u32 old = atomicAdd(&lo[b], fl); up += (u32)(old + fl < old); }   /* the carry */
  if (up) atomicAdd(&hi[b], up);
}
__device__ __forceinline__ u64 fx_get(const u32 *lo, const u32 *hi, i32 b) { return ((u64)hi[b] << 32) | (u64)lo[b]; }

/* The thresholds of a row from its Sel: top_k's lower bound (vLLM: min_p
   first; HF, SGLang: none), top_p's (the top_k threshold; SGLang: none,
   top_p cuts the whole row), and the kept set's. */
__device__ __forceinline__ u32 sel_lower(const Row &R, const Sel *Q) {
  return (R.flags & F_HF) ? MS_KEY_NEG_INF + 1u : Q->t_minp;
}
__device__ __forceinline__ u32 sel_tk(const Row &R, const Sel *Q) {
  const u32 t = sel_lower(R, Q);
  return R.top_k > 0 ? max(t, Q->tk) : t;
}
__device__ __forceinline__ u32 sel_t1(const Row &R, const Sel *Q) {
  return (R.flags & F_JOINT) ? MS_KEY_NEG_INF + 1u : sel_tk(R, Q);
}
__device__ __forceinline__ u32 sel_theta(const Row &R, const Sel *Q) {
  u32 th = sel_tk(R, Q);
  if (R.top_p < 1.0f) th = max(th, Q->tp);
  if (R.flags & F_HF) th = max(th, max(Q->t_minp, Q->t_eps));
  return th;
}

/* Z and the draw from a row's tile sums t[0..nt) in shared memory (every
   thread of a block of at least MS_DRAW_T threads calls; want uniform).
   Threads below MS_DRAW_T each add a fixed run of tiles, so Z and the
   running sums are the same bits in ms_k_row's 1024-thread blocks and
   ms_k_pass's 256 (the threads above add zeros). With want, *token gets
   the first kept id whose running weight exceeds u * Z (where rounding
   leaves none, the drawn tile's last of positive weight), -1 when no
   kept id has weight; Z is returned in every thread. */
#define MS_DRAW_T 256
struct DrawSh { i32 tile, token; double start; };
__device__ double tiles_draw(const double *t, i32 nt, int want, double u, const float *src, i32 V, i32 E, u32 theta,
                             i32 cut, float M, float S, DrawSh *sh, i32 *token) {
  const i32 tid = (i32)threadIdx.x, lane = tid & 31, TILE = 32 * E;
  const float S2 = dscale(S);
  const i32 per = (nt + MS_DRAW_T - 1) / MS_DRAW_T;
  const int mine = tid < MS_DRAW_T;
  double ts = 0.0;
  if (mine) for (i32 j = 0; j < per; j++) { const i32 k = tid * per + j; if (k < nt) ts += t[k]; }
  double Z;
  const double a = bscan_excl(ts, &Z);
  *token = -1;
  if (!want) return Z;
  const double target = u * Z;
  if (tid == 0) { sh->tile = -1; sh->token = -1; }
  __syncthreads();
  double at = a;
  if (mine) for (i32 j = 0; j < per; j++) {   /* the last non-empty tile starting at or below the target */
    const i32 k = tid * per + j;
    if (k < nt) { if (t[k] > 0.0 && at <= target) atomicMax(&sh->tile, k); at += t[k]; }
  }
  __syncthreads();
  const i32 wt = sh->tile;
  if (wt >= 0 && mine) {
    at = a;
    for (i32 j = 0; j < per; j++) { const i32 k = tid * per + j; if (k < nt) { if (k == wt) sh->start = at; at += t[k]; } }
  }
  __syncthreads();
  if (wt >= 0 && tid < 32) {   /* one warp walks the tile */
    double run = sh->start;
    i32 pos_last = -1;   /* the tile's last id of positive weight */
    for (i32 j = 0; j < E; j++) {
      const i32 i = wt * TILE + j * 32 + lane;
      double v = 0.0;
      if (i < V) { const float l = src[i]; if (kept_at(fkey(l), i, theta, cut)) v = (double)wdraw(l, M, S2); }
      double incl = v;
      for (int o = 1; o < 32; o <<= 1) {
        const double n = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += n;
      }
      const unsigned hit = __ballot_sync(0xffffffffu, v > 0.0 && run + incl > target);
      if (hit) { if (lane == 0) sh->token = wt * TILE + j * 32 + (__ffs(hit) - 1); break; }
      const unsigned pos = __ballot_sync(0xffffffffu, v > 0.0);
      if (pos) pos_last = wt * TILE + j * 32 + (31 - __clz((int)pos));
      run += __shfl_sync(0xffffffffu, incl, 31);
    }
    /* the walk's own sums (in id order) fell short of the tile's (in
       tile_sums' order) by rounding: the target lies at the tile's end */
    if (lane == 0 && sh->token < 0) sh->token = pos_last;
  }
  __syncthreads();
  *token = sh->token;
  return Z;
}

/* Row r's parameters from the blob into shared memory, a word per thread
   (the caller syncs before reading them). The blob as it stands: ms_k_mask
   may have rewritten a row's flags and fields earlier on the stream. */
__device__ __forceinline__ void row_to_shared(Row *dst, const Args &A, i32 r) {
  if (threadIdx.x < sizeof(Row) / 4) ((i32 *)dst)[threadIdx.x] = ((const i32 *)((const Row *)A.blob + r))[threadIdx.x];
}

/* The logits row r's passes read: its processed copy in the work rows when
   the statistics wrote one (F_WORK), else the caller's row. */
__device__ __forceinline__ const float *row_src(const Args &A, const Row &R, i32 r) {
  return (R.flags & F_WORK) ? (const float *)A.work + (u64)r * (u64)A.vocab : (const float *)A.logits + (u64)r * A.stride;
}

/* A slot's history: word 0 its prompt's length, then a ring of the last
   cap tokens of prompt + output (token a of the sequence at 1 + a % cap). */
__device__ __forceinline__ i32 *slot_hist(u64 hist, i32 cap, i32 slot) {
  return (i32 *)hist + (u64)slot * (u64)(cap + 1);
}
/* The place of token a (from the prompt's start) in a slot's history h. */
__device__ __forceinline__ i32 *hist_at(i32 *h, i32 cap, u64 a) { return h + 1 + (i32)(a % (u64)cap); }

/* A slot's reasoning budget (src/impl_seq.c's state machine): words
   [0] budget tokens (-1: none), [1] [2] the start and end sequences'
   lengths, [3] the state, [4] tokens left, [5] [6] the matched prefixes of
   start and end, [7] the next end id to force, then the start ids and the
   end ids (MS_BUD_MAX each). */
#define MS_BUD_MAX 32
#define MS_BUD_WORDS (8 + 2 * MS_BUD_MAX)
#define B_IDLE 0
#define B_COUNTING 1
#define B_FORCING 2
#define B_DONE 3
__device__ __forceinline__ i32 *slot_budget(u64 budget, i32 slot) { return (i32 *)budget + (u64)slot * MS_BUD_WORDS; }
/* One step of a sequence matcher: a mismatch restarts (at 1 when the token
   opens the sequence again). */
__device__ __forceinline__ i32 bud_match(const i32 *sq, i32 n, i32 at, i32 token) {
  if (n <= 0) return 0;
  if (sq[at] == token) return at + 1;
  return sq[0] == token ? 1 : 0;
}
/* The state machine, driven by every token of the sequence (prompt too). */
__device__ void budget_step(i32 *b, i32 token) {
  const i32 *start = b + 8, *end = b + 8 + MS_BUD_MAX;
  if (b[0] < 0) return;
  switch (b[3]) {
    case B_IDLE:
    case B_DONE:   /* a new start sequence re-arms the budget */
      b[5] = bud_match(start, b[1], b[5], token);
      if (b[5] == b[1]) { b[5] = 0; b[6] = 0; b[4] = b[0]; b[3] = b[0] > 0 ? B_COUNTING : B_FORCING; b[7] = 0; }
      break;
    case B_COUNTING:
      b[6] = bud_match(end, b[2], b[6], token);
      if (b[6] == b[2]) { b[3] = B_DONE; b[6] = 0; break; }
      if (--b[4] <= 0) { b[3] = B_FORCING; b[7] = b[6]; }   /* a partly written end sequence goes on */
      break;
    case B_FORCING:
      b[7] = token == end[b[7]] ? b[7] + 1 : 0;   /* another token: force from the start */
      if (b[7] >= b[2]) b[3] = B_DONE;
      break;
    default: break;
  }
}
/* The token a slot's budget forces now, or -1. */
__device__ __forceinline__ i32 budget_forced(const i32 *b) { return b[0] >= 0 && b[3] == B_FORCING ? b[8 + MS_BUD_MAX + b[7]] : -1; }

/* The row's result (one thread): the token, its ms_cuda_out, and for an
   accepted token the slot's counter, history and length. status != 0: token
   -1. A call (once a row) in the programs of MS_RESULT_FN. */
__device__ MS_RESULT_FN void put_result(const Args &A, const Row &R, i32 r, i32 token, i32 status, float lp, i32 rank, i32 n_top,
                           int greedy, u64 pos, int accept) {
  Out *out = A.out ? (Out *)A.out + r : (Out *)0;
  ((i32 *)A.tokens)[r] = status ? -1 : token;
  if (out) {
    out->token = status ? -1 : token; out->logprob = status ? ms_neg_inf() : lp; out->rank = rank;
    out->status = status; out->n_top = n_top; out->greedy = greedy; out->seed = R.seed; out->position = pos;
  }
  if (!status && accept && (R.flags & F_ACCEPT) && R.slot >= 0 && R.slot < A.n_slots) {
    u32 *st = (u32 *)A.seq_state + (u64)R.slot * A.seq_stride;
    i32 *len = (i32 *)A.seq_len + R.slot;
    st[token] += 1u;
    slot_seen(A.seq_state, A.n_slots, A.seq_stride, R.slot)[token >> 5] |= 1u << (token & 31);
    if (A.hist) {
      i32 *h = slot_hist(A.hist, A.hist_cap, R.slot);
      *hist_at(h, A.hist_cap, (u64)(u32)h[0] + (u64)(u32)*len) = token;
    }
    *len += 1;
    if (A.budget) budget_step(slot_budget(A.budget, R.slot), token);
  }
}

/* The position a row draws at: the slot's output length, or its own. */
__device__ __forceinline__ u64 row_pos(const Args &A, const Row &R) {
  return (R.flags & F_POS_SLOT) && R.slot >= 0 ? (u64)((const i32 *)A.seq_len)[R.slot] : R.position;
}

/* ---- kernels --------------------------------------------------------------- */

#if MS_IN_UNIT(3)
/* Builds the allow bits (bitmask & allowed ids & ~banned & ~min_tokens
   stops) and the bias bits of every row that has masks or a bias. */
extern "C" __global__ void __launch_bounds__(MS_ST) ms_k_mask(Args A) {
  ms_pdl_start();
  const i32 r = blockIdx.x;
  const Row *rows = (const Row *)A.blob;
  const Row &R = rows[r];
  const i32 flags = R.flags;
  if (!(flags & (F_MASK | F_BIAS | F_LLPEN | F_BUDGET))) return;
  const i32 *blob = (const i32 *)A.blob;
  /* the slot's history (bad words, no_repeat_ngram, llama.cpp's penalties;
     the host sets those flags only for rows with a slot and a history) */
  const i32 *h = (flags & (F_BADW | F_NGRAM | F_LLPEN)) ? slot_hist(A.hist, A.hist_cap, R.slot) : (const i32 *)0;
  const i32 n_out = h ? ((const i32 *)A.seq_len)[R.slot] : 0;
  const i32 total = h ? h[0] + n_out : 0;   /* prompt + output */
  const i32 win = (flags & F_LLPEN) ? ((R.ll_last_n < 0 || R.ll_last_n >= total) ? total : R.ll_last_n) : 0;
  if (((flags & F_NGRAM) && total + 1 >= R.ngram && total > A.hist_cap) || win > min(A.hist_cap, MS_CAND)) {
    /* no_repeat_ngram scans the whole history, llama.cpp's penalties
       their window (at most MS_CAND tokens here), and the ring lost part
       of it: the row fails rather than miss a ban or a penalty */
    if (threadIdx.x == 0) {
      ((Row *)A.blob)[r].status = ST_CAPACITY;   /* the later kernels skip the row */
      put_result(A, R, r, -1, ST_CAPACITY, 0.0f, 0, 0, 0, row_pos(A, R), 0);
    }
    return;
  }
  if (flags & F_LLPEN) {
    /* llama.cpp's penalties: the window's distinct tokens with their
       counts, by token, into the row's pairs (pointwise reads them) */
    __shared__ i32 s_wt[MS_CAND], s_st[MS_CAND];
    const i32 cap = A.hist_cap, tid = threadIdx.x;
    for (i32 j = tid; j < win; j += blockDim.x) s_wt[j] = *hist_at((i32 *)h, cap, (u64)(total - win + j));
    __syncthreads();
    for (i32 j = tid; j < win; j += blockDim.x) {
      const i32 t = s_wt[j];
      i32 at = 0;
      for (i32 q = 0; q < win; q++) at += s_wt[q] < t || (s_wt[q] == t && q < j);
      s_st[at] = t;
    }
    __syncthreads();
    i32 *pl = (i32 *)A.blob + R.ll_pen_off;
    u32 n_runs = 0u;
    for (i32 base = 0; base < win; base += blockDim.x) {   /* (win is the same in every thread) */
      const i32 j = base + tid;
      const u32 start = (j < win && (j == 0 || s_st[j] != s_st[j - 1])) ? 1u : 0u;
      u32 tot;
      const u32 at = bscan_excl(start, &tot);
      if (start) {
        i32 e = j + 1;
        while (e < win && s_st[e] == s_st[j]) e++;
        pl[2 * (n_runs + at)] = s_st[j];
        pl[2 * (n_runs + at) + 1] = e - j;
      }
      n_runs += tot;
    }
    if (tid == 0) ((Row *)A.blob)[r].ll_n_pen = (i32)n_runs;
  }
  u32 *ab = (u32 *)A.allow_bits + (u64)r * (u64)A.words;   /* rows are max_vocab's words apart */
  u32 *bb = (u32 *)A.bias_bits + (u64)r * (u64)A.words;
  const i32 V = A.vocab;
  const i32 W = (V + 31) >> 5;   /* the words this batch uses: the bitmask in the blob has no more */
  /* a reasoning budget forcing its end sequence: the row is that token
     (the allowed ids and the bitmask do not apply; the other masks do),
     as on the CPU. Only then does a budget row take the mask path: the
     later kernels read its flags from the blob, after this one */
  i32 fz = (flags & F_BUDGET) ? budget_forced(slot_budget(A.budget, R.slot)) : -1;
  if (fz >= V) fz = -1;
  const i32 mflags = fz >= 0 ? flags | F_MASK : flags;
  __syncthreads();   /* every thread has read the row's flags */
  if ((flags & F_BUDGET) && threadIdx.x == 0) {
    ((Row *)A.blob)[r].forced = fz;
    if (fz >= 0) ((Row *)A.blob)[r].flags = flags | F_MASK | F_WORK;
  }
  if (mflags & F_MASK) {
    const u32 *bm = R.bitmask_off >= 0 ? (const u32 *)(blob + R.bitmask_off) : (const u32 *)0;
    const int allowed = (flags & F_ALLOWED) && fz < 0;
    for (i32 w = threadIdx.x; w < W; w += blockDim.x)
      ab[w] = fz >= 0 ? (w == (fz >> 5) ? 1u << (fz & 31) : 0u) : allowed ? 0u : (bm ? bm[w] : 0xffffffffu);
    __syncthreads();
    if (allowed) {
      for (i32 j = threadIdx.x; j < R.n_allowed; j += blockDim.x) {
        i32 t = blob[R.allowed_off + j];
        if (t >= 0 && t < V) atomicOr(&ab[t >> 5], 1u << (t & 31));
      }
      __syncthreads();
      if (bm) for (i32 w = threadIdx.x; w < W; w += blockDim.x) ab[w] &= bm[w];
      __syncthreads();
    }
    for (i32 j = threadIdx.x; j < R.n_banned; j += blockDim.x) {
      i32 t = blob[R.banned_off + j];
      if (t >= 0 && t < V) atomicAnd(&ab[t >> 5], ~(1u << (t & 31)));
    }
    if (flags & F_MINTOK) {
      /* the output length: the slot's, 0 without a slot (as the CPU with seq NULL) */
      i32 len = (R.slot >= 0 && R.slot < A.n_slots) ? ((const i32 *)A.seq_len)[R.slot] : 0;
      if (len < R.min_tokens) {
        for (i32 j = threadIdx.x; j < R.n_stop; j += blockDim.x) {
          i32 t = blob[R.stop_off + j];
          if (t >= 0 && t < V) atomicAnd(&ab[t >> 5], ~(1u << (t & 31)));
        }
        if (threadIdx.x == 0 && R.eos >= 0 && R.eos < V) atomicAnd(&ab[R.eos >> 5], ~(1u << (R.eos & 31)));
      }
    }
    if (h) {
      const i32 cap = A.hist_cap;
#define MS_HTOK(a) (*hist_at((i32 *)h, cap, (u64)(a)))   /* token a of prompt + output (a >= total - cap) */
      if (flags & F_NGRAM) {
        /* every earlier n-gram whose first n - 1 ids equal the last n - 1
           bans its last id (HF NoRepeatNGram; total <= cap here) */
        const i32 n = R.ngram;
        for (i32 j = threadIdx.x; j + n <= total; j += blockDim.x) {
          i32 q = 0;
          while (q < n - 1 && MS_HTOK(j + q) == MS_HTOK(total - n + 1 + q)) q++;
          const i32 t = MS_HTOK(j + n - 1);
          if (q == n - 1 && t >= 0 && t < V) atomicAnd(&ab[t >> 5], ~(1u << (t & 31)));
        }
      }
      if (flags & F_BADW) {
        /* a word bans its last id when its others end the history: the
           output in vLLM, prompt + output in HF and llama.cpp (len - 1 <=
           cap: the host refuses longer words) */
        const i32 L = (flags & F_BW_ALL) ? total : n_out;
        for (i32 w = threadIdx.x; w < R.n_bw; w += blockDim.x) {
          const i32 off = blob[R.bw_off + 2 * w], len = blob[R.bw_off + 2 * w + 1];
          if (L < len - 1) continue;
          i32 q = 0;
          while (q < len - 1 && blob[off + q] == MS_HTOK(total - len + 1 + q)) q++;
          const i32 t = blob[off + len - 1];
          if (q == len - 1 && t >= 0 && t < V) atomicAnd(&ab[t >> 5], ~(1u << (t & 31)));
        }
      }
#undef MS_HTOK
    }
  }
  /* the bias bits: the ids with a bias entry, and those of llama.cpp's
     penalty window (their pairs, written above); the statistics call
     pointwise for these ids alone */
  if (flags & (F_BIAS | F_LLPEN)) {
    for (i32 w = threadIdx.x; w < W; w += blockDim.x) bb[w] = 0u;
    __syncthreads();
    if (flags & F_BIAS)
      for (i32 j = threadIdx.x; j < R.n_bias; j += blockDim.x) {
        i32 t = blob[R.bias_tok_off + j];
        if (t >= 0 && t < V) atomicOr(&bb[t >> 5], 1u << (t & 31));
      }
    if (flags & F_LLPEN) {
      const i32 *pl = blob + R.ll_pen_off, n_pen = ((const Row *)A.blob)[r].ll_n_pen;
      for (i32 j = threadIdx.x; j < n_pen; j += blockDim.x) {
        i32 t = pl[2 * j];
        if (t >= 0 && t < V) atomicOr(&bb[t >> 5], 1u << (t & 31));
      }
    }
  }
}
#endif

/* ---- top_k on candidates (resolve_cands here, gather_cands with the passes) -- */

/* Finishes the selection of a top_k row on its candidates: the n <=
   MS_CAND keys >= lower that hold the k largest (all of them when n <= k)
   in ck / cid, in any order (shared arrays; cw: shared scratch; every
   thread of a block of at least MS_RC_T threads calls). top_k, then top_p
   on its survivors, then HF's min_p (t_minp), by the rules of the radix
   path; then the draw with u among the kept in id order. Returns theta
   (the kept set is every key >= theta in the row); *Z, *nkept and *token
   (-1 when nothing has weight) in thread 0. The candidates are put in a
   canonical order first (key descending, id ascending), so the sums and
   the token do not depend on the order they were gathered in; then
   thread t < MS_RC_T takes positions 4t .. 4t + 3 and the others add
   nothing, so the double sums are the same bits in ms_k_row (1024
   threads) and in a pass's last block (256): a row's draw does not
   depend on where it finished. */
#define MS_RC_T 256
#define MS_RC_PER (MS_CAND / MS_RC_T)
static_assert(MS_RC_PER == 4, "resolve_cands: four candidates a thread");
__device__ __noinline__ u32 resolve_cands(const float *src, i32 n, u32 *ck, i32 *cid, double *cw, const Row &R,
                                          u32 lower, u32 t_minp, float M, float S, double u,
                                          double *Z_out, i32 *nkept_out, i32 *token_out) {
  const i32 t = (i32)threadIdx.x, nt = (i32)blockDim.x;
  /* the canonical order: each candidate's rank (exact, by any threads;
     one pass over the list for a thread's candidates t + j * nt, and a
     loop of one comparison where a thread has one: ms_k_row's 1024) */
  u32 kr[MS_RC_PER];
  i32 ir[MS_RC_PER], pr[MS_RC_PER];
#pragma unroll
  for (int j = 0; j < MS_RC_PER; j++) {
    const i32 c = t + j * nt;
    kr[j] = c < n ? ck[c] : 0u;
    ir[j] = c < n ? cid[c] : 0x7fffffff;
    pr[j] = 0;
  }
  if (t + nt >= n) {
#pragma unroll 1
    for (i32 q = 0; q < n; q++) { const u32 kq = ck[q]; pr[0] += (kq > kr[0] || (kq == kr[0] && cid[q] < ir[0])) ? 1 : 0; }
  } else {
#pragma unroll 1
    for (i32 q = 0; q < n; q++) {
      const u32 kq = ck[q];
      const i32 iq = cid[q];
#pragma unroll
      for (int j = 0; j < MS_RC_PER; j++) pr[j] += (kq > kr[j] || (kq == kr[j] && iq < ir[j])) ? 1 : 0;
    }
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < MS_RC_PER; j++) if (t + j * nt < n) { ck[pr[j]] = kr[j]; cid[pr[j]] = ir[j]; }
  __syncthreads();
  /* positions 4t .. 4t + 3, largest first */
  u32 k4[MS_RC_PER];
  i32 id4[MS_RC_PER];
  double w4[MS_RC_PER];
  bool mine[MS_RC_PER];
#pragma unroll
  for (int j = 0; j < MS_RC_PER; j++) {
    const i32 q = MS_RC_PER * t + j;
    mine[j] = t < MS_RC_T && q < n;
    k4[j] = mine[j] ? ck[q] : 0u;
    id4[j] = mine[j] ? cid[q] : 0x7fffffff;
    w4[j] = mine[j] ? (double)wgt(src[id4[j]], M, S) : 0.0;
  }
  u32 th = lower;
  /* the k-th largest; with n <= k every candidate stays, and the smallest
     is the threshold (the row's other keys are below the candidates) */
  if (R.top_k > 0 && n > 0) th = max(th, ck[min(n, R.top_k) - 1]);
  if (R.top_p < 1.0f) {
    /* a value stays iff the mass strictly above it (the prefix at the
       first entry of its key) is < p * the top_k survivors' mass */
    double loc[MS_RC_PER], acc = 0.0;
#pragma unroll
    for (int j = 0; j < MS_RC_PER; j++) { loc[j] = acc; acc += (mine[j] && k4[j] >= th) ? w4[j] : 0.0; }
    double z1;
    const double base = bscan_excl(acc, &z1);
#pragma unroll
    for (int j = 0; j < MS_RC_PER; j++) if (mine[j]) cw[MS_RC_PER * t + j] = base + loc[j];
    __syncthreads();
    u32 tl = 0xffffffffu;
#pragma unroll
    for (int j = 0; j < MS_RC_PER; j++) {
      if (!mine[j]) continue;
      i32 lo = 0, hi = MS_RC_PER * t + j;
      while (lo < hi) { const i32 mid = (lo + hi) >> 1; if (ck[mid] > k4[j]) lo = mid + 1; else hi = mid; }
      if (k4[j] >= th && w4[j] > 0.0 && cw[lo] < (double)R.top_p * z1) tl = min(tl, k4[j]);
    }
    u32 tp = bmin_u(tl);
    if (tp == 0xffffffffu) tp = ck[0];   /* nothing qualifies (rounding): the largest value */
    th = max(th, tp);
  }
  if (R.flags & F_HF) th = max(th, t_minp);
  u32 cnt = 0u;
  double zl = 0.0;
  bool kept[MS_RC_PER];
#pragma unroll
  for (int j = 0; j < MS_RC_PER; j++) {
    kept[j] = mine[j] && k4[j] >= th;
    cnt += kept[j] ? 1u : 0u;
    zl += kept[j] ? w4[j] : 0.0;
  }
  const i32 nk = (i32)bsum_u(cnt);
  const double Z = bsum_d(zl);
  /* the draw: the first kept id whose running weight exceeds u * Z; the
     kept weights put in id order first */
  i32 ip[MS_RC_PER] = { 0, 0, 0, 0 };
  if (kept[0]) {   /* (positions are kept largest first: a thread with none kept has no work) */
#pragma unroll 1
    for (i32 q = 0; q < n; q++) {
      const bool kq = ck[q] >= th;
      const i32 iq = cid[q];
#pragma unroll
      for (int j = 0; j < MS_RC_PER; j++) ip[j] += (kq && iq < id4[j]) ? 1 : 0;
    }
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < MS_RC_PER; j++) if (kept[j]) { cw[ip[j]] = w4[j]; cid[ip[j]] = id4[j]; }
  __syncthreads();
  double v4[MS_RC_PER], run[MS_RC_PER], acc2 = 0.0;
#pragma unroll
  for (int j = 0; j < MS_RC_PER; j++) {
    const i32 q = MS_RC_PER * t + j;
    v4[j] = t < MS_RC_T && q < nk ? cw[q] : 0.0;
    run[j] = acc2;
    acc2 += v4[j];
  }
  double tot;
  const double base2 = bscan_excl(acc2, &tot);
  i32 first = 0x7fffffff, lastp = -1;
#pragma unroll
  for (int j = 0; j < MS_RC_PER; j++) {
    const i32 q = MS_RC_PER * t + j;
    if (!(v4[j] > 0.0)) continue;
    if (first == 0x7fffffff && (base2 + run[j]) + v4[j] > u * Z) first = q;
    lastp = q;
  }
  first = bmin_i(first);
  lastp = bmax_i(lastp);
  if (t == 0) {
    *Z_out = Z;
    *nkept_out = nk;
    *token_out = first != 0x7fffffff ? cid[first] : lastp >= 0 ? cid[lastp] : -1;
  }
  __syncthreads();
  return th;
}

/* Scalars of end_cands in shared memory. */
struct CandSh { double z; i32 nk, token; };
/* The end of an F_END top_k row on its candidates (Q->ck / Q->cid, keys
   >= the bound that hold its k largest) in ms_k_tail: resolve_cands, then
   the row's result; ms_k_row is not needed. sk, si, sw: shared room for
   MS_CAND keys, ids and doubles. Every thread calls. */
__device__ MS_BLOCK_FN void end_cands(const Args &A, const Row &R, i32 r, Sel *Q, const float *src, float M, float S, u32 *sk, i32 *si,
                          double *sw, CandSh *sc) {
  const i32 n = (i32)min(__ldcg(&Q->ncand), (u32)MS_CAND);
  for (i32 j = threadIdx.x; j < n; j += blockDim.x) { sk[j] = __ldcg(&Q->ck[j]); si[j] = __ldcg(&Q->cid[j]); }
  __syncthreads();
  const u64 pos = row_pos(A, R);
  resolve_cands(src, n, sk, si, sw, R, sel_lower(R, Q), Q->t_minp, M, S, ms_uniform_dev(R.seed, pos, 0u), &sc->z, &sc->nk,
                &sc->token);
  if (threadIdx.x == 0) put_result(A, R, r, sc->token, sc->token >= 0 ? 0 : ST_ALL_MASKED, 0.0f, 0, 0, 0, pos, 1);
}

/* F_KFAST: top_k by candidates from the statistics' lists (ms_k_tail),
   for k up to MS_KFAST_MAX (ms__cuda_pack sets it; $MYSAMPLE_CUDA_KFAST=0
   at ms_cuda_create does not, to compare). */
#define MS_KFAST_MAX 256
#define MS_KTH_BINS 256   /* kth_key's digits: 8 bits */
#define MS_KSLOTS 4096    /* F_KFAST's lists in Sel.hist (keys) and Sel.tsum (ids): 4096 / G words a block */
template <class K> __device__ __noinline__ u32 kth_key(const K keys, i32 n, u32 k, u32 *hist);
/* kth_key's keys: a block's lists in shared memory, and a row's lists
   in its Sel (written by other blocks: read from L2), slot s of
   `slot` words holding its block's bound at 0, then nb[s] keys (the rest
   read as 0, below every key of a logit). */
struct KeysShared {
  const u32 *p;
  __device__ u32 operator()(i32 i) const { return p[i]; }
};
struct KeysSlots {
  const u32 *p;
  const i32 *nb;
  i32 slot;
  __device__ u32 operator()(i32 i) const {
    const i32 s = i / slot, j = i - s * slot;
    return j >= 1 && j <= nb[s] ? __ldcg(p + i) : 0u;
  }
};

#if MS_IN_UNIT(2)
/* F_KFAST, in each block of ms_k_stats after the read: the keys of the
   block's lists (tk / ti) that may be among the row's k largest, into its
   slot of the row's Sel (slot words from c * slot of Sel.hist, ids at the
   same places of Sel.tsum): at most slot - 1 of them, the largest
   min(k, slot - 1) with their ties as room allows. Word 0 of the slot gets
   the block's bound: the largest key it left out (a thread's fifth, or a
   list key not written), the key of -inf when none. Returns how many it
   wrote. */
__device__ __noinline__ i32 kfast_block(const u32 *tk, const i32 *ti, u32 *keys, i32 *ids, i32 slot, u32 k, u32 *hist,
                                        u32 *s_n) {
  const i32 tid = (i32)threadIdx.x, cap = slot - 1;
  const u32 kb = min(k, (u32)cap);
  const u32 kth = kth_key(KeysShared{tk}, MS_TOP4 * MS_ST, kb, hist);
  if (tid == 0) *s_n = 0u;
  __syncthreads();
  /* fewer than kb real keys: kth is -inf's, and every real key is written */
  u32 left = tk[MS_TOP4 * MS_ST + tid];   /* what the thread dropped */
#pragma unroll
  for (int j = 0; j < MS_TOP4; j++) {
    const u32 key = tk[j * MS_ST + tid];
    if (key > kth) {   /* fewer than kb: they all fit */
      const u32 at = atomicAdd(s_n, 1u);
      keys[1 + at] = key; ids[1 + at] = ti[j * MS_ST + tid];
    }
  }
  __syncthreads();
#pragma unroll
  for (int j = 0; j < MS_TOP4; j++) {
    const u32 key = tk[j * MS_ST + tid];
    if (key == kth && key > MS_KEY_NEG_INF) {
      const u32 at = atomicAdd(s_n, 1u);
      if (at < (u32)cap) { keys[1 + at] = key; ids[1 + at] = ti[j * MS_ST + tid]; }
      else left = max(left, key);
    } else if (key < kth && key > MS_KEY_NEG_INF) left = max(left, key);
  }
  __threadfence();   /* the slot before the arrival that announces it */
  left = bmax_u(left);
  if (tid == 0) keys[0] = left;
  return (i32)min(*s_n, (u32)cap);
}

#endif

#if MS_IN_UNIT(6)
/* F_KFAST, at the start of ms_k_tail (one block a row, after the lists of
   ms_k_stats's blocks are complete): the k-th largest key of
   the lists (kth_key over the slots), the bound edge = max(it, lower), and
   whether the lists hold every key >= edge of the row (every block's
   bound below edge). Then: the keys >= edge listed in Q->ck / Q->cid
   (cand 3: ms_k_row resolves them, no pass reads the row again), or, with
   more than MS_CAND of them, the counting passes (a crowd of ties); if the
   lists may miss some, ms_k_tail gathers the keys >= edge from the row
   (cand 2: edge is at most the row's k-th largest, the lists being some of
   its elements). nb: the slots' counts (shared). */
__device__ __noinline__ void kfast_row(Sel *Q, const Row &R, i32 G, const i32 *nb, u32 *hist, u32 *s_n) {
  const i32 tid = (i32)threadIdx.x, slot = MS_KSLOTS / G;
  const u32 *keys = (const u32 *)Q->hist;
  const i32 *ids = (const i32 *)Q->tsum;
  u32 kth = kth_key(KeysSlots{keys, nb, slot}, G * slot, (u32)R.top_k, hist);
  const u32 edge = max(max(kth, sel_lower(R, Q)), MS_KEY_NEG_INF + 1u);
  u32 left = MS_KEY_NEG_INF;
  for (i32 b = 0; b < G; b++) left = max(left, __ldcg(keys + b * slot));
  if (tid == 0) *s_n = 0u;
  __syncthreads();
  if (left >= edge) {
    /* the lists may miss keys >= edge: ms_k_tail reads the row (kth 0:
       fewer than k keys listed, no bound; its count radix) */
    if (tid == 0 && kth > MS_KEY_NEG_INF) { Q->cand = 2; Q->cedge = edge; Q->cdone = 1; }
    return;
  }
  for (i32 i = tid; i < G * slot; i += (i32)blockDim.x) {
    const i32 b = i / slot, j = i - b * slot;
    if (j < 1 || j > nb[b]) continue;
    const u32 key = __ldcg(keys + i);
    if (key < edge) continue;
    const u32 at = atomicAdd(s_n, 1u);
    if (at < (u32)MS_CAND) { Q->ck[at] = key; Q->cid[at] = __ldcg(ids + i); }
  }
  __syncthreads();
  if (tid == 0 && *s_n <= (u32)MS_CAND) { Q->cand = 3; Q->ncand = *s_n; Q->cdone = 1; }
}
#endif

#if MS_BINS_ON && MS_IN_UNIT(8)
/* F_PB_STATS, in every block of ms_k_pbstats before the read: the anchor
   (the largest finite logit of the row's sample: the same in every
   block), the bins c (shared) zeroed, *pb for row_stats. */
__device__ __noinline__ void pb_stats_begin(const Args &A, const Row &R, i32 r, u32 *c, u32 *above, u32 *n_above, PbStats *pb) {
  const float *raw = (const float *)A.logits + (u64)r * A.stride;
  const i32 tid = (i32)threadIdx.x;
  float v = ms_neg_inf();
#pragma unroll
  for (i32 j = 0; j < 4; j++) {
    const i32 i = pb_sample(tid, j, A.vocab);
    if (i >= 0) { const float x = raw[i]; if (x < ms_pos_inf() && x > v) v = x; }   /* (not NaN, not +inf) */
  }
  v = bmax_f(v);
  for (i32 b = tid; b < MS_PB_NB; b += MS_ST) c[b] = 0u;
  if (tid == 0) {
    float lower_f, unused;
    kept_floats(MS_KEY_NEG_INF + 1u, &lower_f, &unused);   /* (sel_t1 of such a row: no top_k, no vLLM min_p) */
    pb->c = c; pb->above = above; pb->n_above = n_above;
    pb->a = __fadd_rn(v, 0.0f);   /* (-0 as +0: no key above it compares equal) */
    pb->S = R.inv_temp; pb->lower_f = lower_f;
    *n_above = 0u;
  }
  __syncthreads();
}
/* F_PB_STATS, in every block after the read: its counts added into the
   row's (Sel.hist as MS_PB_NB u32), its keys above the anchor appended to
   the row's list (A.pcand, counted in Sel.nab; more than MS_PB_ABOVE in
   the block spoil the count, so the row takes the radix passes). */
__device__ __noinline__ void pb_stats_block(const Args &A, Sel *Q, i32 r, const u32 *c, const u32 *above, const u32 *n_above) {
  __shared__ u32 s_base;
  const i32 tid = (i32)threadIdx.x;
  __syncthreads();   /* (the counts, c[0] last) */
  u32 *gc = (u32 *)Q->hist;
  for (i32 b = tid; b < MS_PB_NB; b += MS_ST) { const u32 v = c[b]; if (v) atomicAdd(gc + b, v); }
  const u32 n = *n_above;
  if (tid == 0) s_base = n ? atomicAdd(&Q->nab, n > MS_PB_ABOVE ? (u32)MS_PCAND + 1u : n) : 0u;
  __syncthreads();
  u32 *gl = (u32 *)A.pcand + (u64)r * (2u * MS_PCAND);
  const u32 base = s_base;
  if (n <= MS_PB_ABOVE)
    for (u32 k = (u32)tid; k < n && base + k < (u32)MS_PCAND; k += MS_ST) gl[base + k] = above[k];
  __threadfence();   /* the counts and keys before the arrival that announces them */
  __syncthreads();
}
/* F_PB_STATS, in the row's last block (after stats_close readied Q): the
   exact integer mass of the keys above the anchor a, the row's counts
   into c (shared), pb_window, and the range of keys P_PGATHER lists
   (Q->pk_lo, pk_hi; Q->pbins when it holds at most MS_PCAND keys, as
   P_PBIN's last block). Every thread calls; Sel.nab zeroed. */
__device__ __noinline__ void pb_stats_finish(const Args &A, const Row &R, Sel *Q, i32 r, float M, i32 st, float a, u32 *c) {
  __shared__ u32 s_n;
  const i32 tid = (i32)threadIdx.x;
  if (tid == 0) { s_n = __ldcg(&Q->nab); Q->nab = 0u; }
  __syncthreads();
  const u32 n_top = s_n;
  if (st || n_top > (u32)MS_PCAND || !(R.top_p > 0.0f)) return;
  const float S = R.inv_temp;
  const u32 *gl = (const u32 *)A.pcand + (u64)r * (2u * MS_PCAND);
  __shared__ unsigned long long s_z;
  if (tid == 0) s_z = 0ull;
  __syncthreads();
  u64 z = 0ull;
  for (u32 k = (u32)tid; k < n_top; k += MS_ST) z += fxw(unkey(__ldcg(gl + k)), M, S);
  if (z) atomicAdd(&s_z, (unsigned long long)z);
  __syncthreads();
  const u64 z_top = s_z;
  const u32 *gc = (const u32 *)Q->hist;
  u32 v[MS_PB_NB / MS_ST];
#pragma unroll
  for (i32 q = 0; q < MS_PB_NB / MS_ST; q++) v[q] = __ldcg(gc + tid + q * MS_ST);
#pragma unroll
  for (i32 q = 0; q < MS_PB_NB / MS_ST; q++) c[tid + q * MS_ST] = v[q];
  __syncthreads();
  /* (a = -inf: no finite sample, every finite key above it, no bins) */
  const double d = a > ms_neg_inf() ? ((double)M - (double)a) * (double)S : 0.0;
  i32 b_lo, b_hi;
  const u32 n = pb_window(c, R.top_p, d, n_top, (double)z_top * (1.0 / MS_FX), &b_lo, &b_hi);
  if (tid == 0) {
    const u32 lower = MS_KEY_NEG_INF + 1u, ka = fkey(a), kmax = fkey(M);
    Q->pk_lo = b_lo >= MS_PB_NB ? ka + 1u : topp_key(lower, ka, b_lo, a, S);
    Q->pk_hi = b_hi >= MS_PB_NB ? kmax + 1u : b_hi == MS_PB_NB - 1 ? ka + 1u : topp_key(lower, ka, b_hi + 1, a, S);
    Q->ncand = 0u; Q->pbins = n > 0u && n <= (u32)MS_PCAND ? 2 : 0;   /* (2: the statistics' bins; tests read it) */
  }
}
#endif

#if MS_IN_UNIT(2) || MS_IN_UNIT(8)
/* A row whose statistics count top_p's bins: ms_k_pbstats's, not
   ms_k_stats's (ms__cuda_pack sets F_PB_STATS only on a row read as it
   is, without a small top_k: the test keeps the two kernels' rows apart
   whatever the flags). */
__device__ __forceinline__ bool pb_stats_row(const Row &R) {
  return (R.flags & F_PB_STATS) && !(R.flags & (F_KFAST | F_WORK | F_RAW_LSE | F_MASK | F_BIAS | F_PEN | F_DECAY | F_LLPEN));
}
/* The start of both statistics kernels: the arguments and row r's
   parameters into shared memory (row_stats and pointwise take them by
   reference: a reference to the parameter made every thread copy all 192
   bytes of it to local memory first, 24 stores a thread, 37 MB a batch
   of 256 x 3 blocks; one copy in shared memory serves the block). */
__device__ __forceinline__ void stats_begin(const Args &A_, Args *sA, Row *sR, i32 r) {
  if (threadIdx.x == 0) *sA = A_;
  row_to_shared(sR, A_, r);
  __syncthreads();
}
/* The end of the statistics in every block of ms_k_stats and
   ms_k_pbstats: the block's partial p into the row's list; the row's
   last block to arrive (returns 1, *t the row's statistics in every
   thread) readies the row's Sel for the passes and writes the result of
   a greedy F_END row, or of a row that cannot be sampled. */
__device__ __forceinline__ int stats_close(const Args &A, const Row &R, Sel *Q, i32 r, i32 c, Part p, i32 *s_last, Part *t_out) {
  Part *pp = (Part *)A.parts + (u64)r * (u64)A.n_parts;
  if (threadIdx.x == 0) {
    pp[c] = p;
    __threadfence();   /* the partial before the count that announces it */
    *s_last = arrive(&Q->stats_arrived, A.n_parts);
  }
  __syncthreads();
  if (!*s_last) return 0;
  const Part t = combine_parts(pp, A.n_parts);
  if (threadIdx.x == 0) {
    Q->P = t;
    Q->status = part_status(t);
    Q->arrived = 0;   /* (no block of this launch counts in it) */
    Q->t_minp = (!(R.flags & F_GREEDY) && R.min_p > 0.0f) ? minp_key(t.m, R.inv_temp, R.min_p) : MS_KEY_NEG_INF + 1u;
    Q->lower = 0u; Q->prefix = 0u; Q->pm = 0u; Q->tk = 0u; Q->tp = 0u;
    Q->cdone = 0; Q->pdone = 0; Q->cand = 0; Q->cedge = 0u; Q->ncand = 0u;
    Q->kkeep = 0xffffffffu; Q->cut = 0x7fffffff; Q->prest = 0.0; Q->praw = 0ull; Q->pbins = 0; Q->sums_done = 0;
    Q->target = 0.0;
    Q->t_eps = 0u;
    Q->pz = 0ull; Q->pa = 0ull;
    Q->lp_go = 0;
    /* rows that end here: greedy ones, and any that cannot be sampled */
    const i32 st = part_status(t);
    const int greedy = (R.flags & F_GREEDY) != 0;
    if ((R.flags & F_END) && (greedy || st)) put_result(A, R, r, greedy ? t.am : -1, st, 0.0f, 0, 0, greedy && !st, row_pos(A, R), 1);
  }
  *t_out = t;
  return 1;
}
#endif

#if MS_IN_UNIT(2)
/* Block (r, c) computes the statistics of chunk c of row r; the last
   block of the row to finish combines the n_parts partials into the
   row's Sel, readies it for ms_k_pass and writes the result of a greedy
   F_END row. (256, 6): at most 40
   registers, so 6 blocks share an SM; at 64 only 4 did, and this
   memory-bound pass wants every warp it can get. Rows whose statistics
   count top_p's bins (pb_stats_row) are ms_k_pbstats's. */
extern "C" __global__ void __launch_bounds__(MS_ST, 6) ms_k_stats(Args A_) {
  ms_pdl_start();
  __shared__ i32 s_last;
  __shared__ Row sR;
  __shared__ Args sA;   /* (stats_begin) */
  /* F_KFAST: the threads' lists, kth_key's histogram, the slots' counts */
  __shared__ u32 s_tk[(MS_TOP4 + 1) * MS_ST];   /* (row MS_TOP4: the threads' fifths) */
  __shared__ i32 s_ti[MS_TOP4 * MS_ST];
  __shared__ u32 s_kth[MS_KTH_BINS];
  __shared__ u32 s_n;
  const i32 r = blockIdx.x, c = blockIdx.y;
  stats_begin(A_, &sA, &sR, r);
  const Args &A = sA;
  const Row &R = sR;
  Sel *Q = (Sel *)A.sel + r;
  if (R.status != 0 || pb_stats_row(R)) return;
  i32 beg = c * A.chunk, end = min(A.vocab, beg + A.chunk);
  if (beg > end) beg = end;
  const int kfast = (R.flags & F_KFAST) && R.top_k <= MS_KFAST_MAX;
  const i32 slot = MS_KSLOTS / A.n_parts;
  Part p = row_stats(A, R, r, beg, end, kfast ? s_tk : (u32 *)0, s_ti);
  /* F_KFAST: the block's candidates into its slot of Sel.hist / Sel.tsum
     (scratch until the last block clears hist), their count in p.pad */
  if (kfast) p.pad = kfast_block(s_tk, s_ti, (u32 *)Q->hist + c * slot, (i32 *)Q->tsum + c * slot, slot, (u32)R.top_k, s_kth, &s_n);
  Part t;
  if (!stats_close(A, R, Q, r, c, p, &s_last, &t)) return;
  /* (F_KFAST: ms_k_tail reads the blocks' lists, kfast_row, then zeroes
     hist; in this kernel kfast_row made its program the largest to
     compile, 1.14 s against 0.92 without, one core) */
  if (!(kfast && !part_status(t))) for (i32 b = threadIdx.x; b < MS_BINS; b += blockDim.x) Q->hist[b] = 0ull;
}
#endif

#if MS_BINS_ON && MS_IN_UNIT(8)
/* ms_k_stats for the rows whose statistics count top_p's bins
   (F_PB_STATS, pb_stats_row), the others returning at once: a kernel of
   its own, in a program of its own, since inside ms_k_stats the bins'
   code made that program compile in 2.0-2.3 s where it takes 0.9 without
   (one core; the cold compile waits for the largest program). Launched
   only when some row has F_PB_STATS, beside ms_k_stats when some other
   row does not. */
extern "C" __global__ void __launch_bounds__(MS_ST, 6) ms_k_pbstats(Args A_) {
  ms_pdl_start();
  __shared__ i32 s_last;
  __shared__ Row sR;
  __shared__ Args sA;   /* (stats_begin) */
  __shared__ u32 s_c[MS_PB_NB], s_above[MS_PB_ABOVE];   /* the block's bins and the keys above the anchor */
  __shared__ PbStats s_pb;
  __shared__ u32 s_nab;
  const i32 r = blockIdx.x, c = blockIdx.y;
  stats_begin(A_, &sA, &sR, r);
  const Args &A = sA;
  const Row &R = sR;
  Sel *Q = (Sel *)A.sel + r;
  if (R.status != 0 || !pb_stats_row(R)) return;
  i32 beg = c * A.chunk, end = min(A.vocab, beg + A.chunk);
  if (beg > end) beg = end;
  pb_stats_begin(A, R, r, s_c, s_above, &s_nab, &s_pb);
  const Part p = row_stats_pb(A, r, beg, end, &s_pb);
  pb_stats_block(A, Q, r, s_c, s_above, &s_nab);
  Part t;
  if (!stats_close(A, R, Q, r, c, p, &s_last, &t)) return;
  pb_stats_finish(A, R, Q, r, t.m, part_status(t), s_pb.a, s_c);
  /* (after the finish: it reads the row's bins from hist) */
  for (i32 b = threadIdx.x; b < MS_BINS; b += blockDim.x) Q->hist[b] = 0ull;
}
#endif

/* ---- selection ------------------------------------------------------------- */

/* Among bins hist[0..nb) (bin nb-1 holds the largest keys), the lowest
   non-empty bin whose "mass strictly above" is < target. That bin holds
   the threshold: for counts (target = k) the k-th largest key, for masses
   (target = p * Z) the smallest value whose larger mass stays below p * Z.
   Returns the bin; *above gets the mass of the bins above it. */
template <class T> __device__ MS_BLOCK_FN i32 find_bin(const T *hist, i32 nb, T target, T *above) {
  __shared__ i32 s_bin;
  __shared__ T s_above;
  const i32 per = (nb + (i32)blockDim.x - 1) / (i32)blockDim.x;
  const i32 first = (i32)threadIdx.x * per;   /* offset from the top */
  T s = (T)0;
  for (i32 j = 0; j < per; j++) { i32 o = first + j; if (o < nb) s += hist[nb - 1 - o]; }
  T total;
  T a0 = bscan_excl(s, &total);
  if (threadIdx.x == 0) s_bin = 0x7fffffff;
  __syncthreads();
  T a = a0;
  for (i32 j = 0; j < per; j++) {
    i32 o = first + j;
    if (o >= nb) break;
    i32 b = nb - 1 - o;
    T h = hist[b];
    if (h > (T)0 && a < target) atomicMin(&s_bin, b);
    a += h;
  }
  __syncthreads();
  i32 win = s_bin;
  if (win == 0x7fffffff) {
    /* nothing qualifies (rounding): the top non-empty bin */
    __syncthreads();
    a = a0;
    for (i32 j = 0; j < per; j++) {
      i32 o = first + j;
      if (o >= nb) break;
      if (hist[nb - 1 - o] > (T)0) { atomicMin(&s_bin, o); break; }
    }
    __syncthreads();
    win = s_bin == 0x7fffffff ? nb - 1 : nb - 1 - s_bin;
    __syncthreads();
  }
  a = a0;
  for (i32 j = 0; j < per; j++) {
    i32 o = first + j;
    if (o >= nb) break;
    if (nb - 1 - o == win) s_above = a;
    a += hist[nb - 1 - o];
  }
  __syncthreads();
  *above = s_above;
  __syncthreads();
  return win;
}

/* The k-th largest of the n keys keys(0 .. n-1), by radix selection in
   the block, 8 bits a pass (hist: MS_KTH_BINS words of shared memory: 1 KB
   in ms_k_stats, where 8 KB for 11-bit digits would take shared memory
   from the L1 cache of every row's statistics). n >= k >= 1. Every thread
   calls. */
template <class K> __device__ __noinline__ u32 kth_key(const K keys, i32 n, u32 k, u32 *hist) {
  const i32 tid = (i32)threadIdx.x, nt = (i32)blockDim.x;
  u32 prefix = 0u, pm = 0u, target = k;
#pragma unroll 1
  for (int pass = 0; pass < 4; pass++) {
    const int sh = 24 - 8 * pass;
    const i32 nb = MS_KTH_BINS;
    for (i32 b = tid; b < nb; b += nt) hist[b] = 0u;
    __syncthreads();
    for (i32 i = tid; i < n; i += nt) {
      const u32 key = keys(i);
      if ((key & pm) == prefix) atomicAdd(&hist[(key >> sh) & (u32)(nb - 1)], 1u);
    }
    __syncthreads();
    u32 above;
    const i32 b = find_bin<u32>(hist, nb, target, &above);
    target -= above;
    prefix |= (u32)b << sh;
    pm |= (u32)(nb - 1) << sh;
  }
  return prefix;
}

/* The value of element i as a selection sees it: the row's finite logits
   (raw: NaN and +Inf, which a row can hold only where it masks them, count
   as -inf, as in the raw log-sum-exp), or the kept set only (-inf
   elsewhere; processed logprobs). */
struct LpVal {
  const float *p;
  u32 theta;
  i32 cut;
  int raw;
  __device__ float of(i32 i, float v) const {   /* element i whose logit is v */
    if (raw) return v < ms_pos_inf() ? v : ms_neg_inf();   /* (NaN < inf is false) */
    return kept_at(fkey(v), i, theta, cut) ? v : ms_neg_inf();
  }
  __device__ float operator()(i32 i) const { return of(i, p[i]); }
};

/* The key of the k-th largest value among the elements whose key is
   >= lower (radix selection, 11 + 11 + 10 bits, one pass over the row
   each). *n_eq gets how many elements have that key, *n_above how many are
   larger. When at most k elements qualify, returns `lower` and *n_above =
   the count. */
__device__ __noinline__ u32 select_count(const LpVal vf, i32 V, u32 lower, u32 k, u32 *n_above, u32 *n_eq) {
  __shared__ u32 hist[MS_BINS];
  const int shifts[3] = {21, 10, 0};
  const int bits[3] = {11, 11, 10};
  u32 prefix = 0u, pm = 0u, target = k, eq = 0u;
#pragma unroll 1
  for (int pass = 0; pass < 3; pass++) {
    const i32 nb = 1 << bits[pass];
    const int sh = shifts[pass];
    for (i32 b = threadIdx.x; b < nb; b += blockDim.x) hist[b] = 0u;
    __syncthreads();
    row_for<1>(vf.p, 0, V, [&](i32 i, float x) {
      const u32 key = fkey(vf.of(i, x));
      if (key >= lower && (key & pm) == prefix) atomicAdd(&hist[(key >> sh) & (u32)(nb - 1)], 1u);
    });
    __syncthreads();
    if (pass == 0) {
      u32 tot = 0u;
      for (i32 b = threadIdx.x; b < nb; b += blockDim.x) tot += hist[b];
      tot = bsum_u(tot);
      if (tot <= k) { *n_above = tot; *n_eq = 0u; return lower; }
    }
    u32 above;
    i32 b = find_bin<u32>(hist, nb, target, &above);
    target -= above;
    prefix |= (u32)b << sh;
    pm |= (u32)(nb - 1) << sh;
    if (pass == 2) eq = hist[b];
    __syncthreads();
  }
  *n_above = k - target;
  *n_eq = eq;
  return prefix;
}

/* top_p's threshold over a whole row by one block (ms_k_tail, when a
   small top_k left a crowd of ties): the smallest key >=
   lower whose mass strictly above is < p * Z, Z the mass of the keys >=
   lower, by the radix passes' rule on integer masses (fxw), three reads
   of the row. shd: MS_BINS doubles of shared scratch (first the bins'
   two words). Every thread calls. */
__device__ __noinline__ u32 select_mass(const float *src, i32 V, u32 lower, float top_p, float M, float S, double *shd) {
  const i32 tid = (i32)threadIdx.x, nt = (i32)blockDim.x;
  u32 *lo = (u32 *)shd, *hi = lo + MS_BINS;
  const int shifts[3] = {21, 10, 0};
  const int bits[3] = {11, 11, 10};
  u32 prefix = 0u, pm = 0u;
  double target = 0.0;
#pragma unroll 1
  for (int pass = 0; pass < 3; pass++) {
    const i32 nb = 1 << bits[pass];
    const int sh = shifts[pass];
    for (i32 b = tid; b < MS_BINS; b += nt) lo[b] = hi[b] = 0u;
    __syncthreads();
    row_for<1>(src, 0, V, [&](i32, float l) {
      const u32 key = fkey(l);
      if (key >= lower && (key & pm) == prefix) fx_add(lo, hi, (i32)((key >> sh) & (u32)(nb - 1)), fxw(l, M, S));
    });
    __syncthreads();
    double v[MS_BINS / MS_ST];   /* (at least 256 threads) */
#pragma unroll
    for (i32 q = 0; q < MS_BINS / MS_ST; q++) {
      const i32 b = tid + q * nt;
      v[q] = b < MS_BINS ? (double)fx_get(lo, hi, b) * (1.0 / MS_FX) : 0.0;
    }
    __syncthreads();
#pragma unroll
    for (i32 q = 0; q < MS_BINS / MS_ST; q++) if (tid + q * nt < MS_BINS) shd[tid + q * nt] = v[q];
    __syncthreads();
    if (pass == 0) {
      double tot = 0.0;
      for (i32 b = tid; b < nb; b += nt) tot += shd[b];
      target = (double)top_p * bsum_d(tot);
    }
    double above;
    const i32 b = find_bin<double>(shd, nb, target, &above);
    target -= above;
    prefix |= (u32)b << sh;
    pm |= (u32)(nb - 1) << sh;
  }
  return prefix;
}

/* The draw's tile sums of a row's kept weight (wdraw of the keys >=
   theta) by one block, a warp a tile, into t_out, as P_SUMS would find
   them but for the order of the double additions (ms_k_tail, for a
   crowd of ties). Every thread calls. */
__device__ __noinline__ void row_tile_sums(const float *src, i32 V, u32 theta, float M, float S, double *t_out) {
  const i32 lane = (i32)threadIdx.x & 31, nw = (i32)blockDim.x >> 5, E = tile_e(V), TILE = 32 * E;
  const i32 n_tiles = (V + TILE - 1) / TILE;
  const float S2 = dscale(S);
  float thf, thu;
  kept_floats(theta, &thf, &thu);
  for (i32 t = (i32)threadIdx.x >> 5; t < n_tiles; t += nw) {
    double s = 0.0;
    for (i32 g = 0; g < TILE; g += 128) {
      const i32 i0 = t * TILE + g + 4 * lane;
      float a = 0.0f;
#pragma unroll
      for (int c = 0; c < 4; c++) {
        const float l = i0 + c < V ? src[i0 + c] : ms_neg_inf();
        a = __fadd_rn(a, l >= thf ? wdraw(l, M, S2) : 0.0f);
      }
      s += (double)a;
    }
    s = warp_sum(s);
    if (lane == 0) t_out[t] = s;
  }
  __syncthreads();
}

/* Appends the ids in [beg, end) whose key is >= edge to ck / cid (the
   block's threads; *n counts them, in shared or global memory; at most
   MS_CAND are stored, which the caller's count of them guarantees). */
__device__ MS_BLOCK_FN void gather_cands(const float *src, i32 beg, i32 end, u32 edge, u32 *n, u32 *ck, i32 *cid) {
  row_for<2>(src, beg, end, [&](i32 i, float x) {
    const u32 key = fkey(x);
    if (key >= edge) {
      const u32 pos = atomicAdd(n, 1u);
      if (pos < MS_CAND) { ck[pos] = key; cid[pos] = i; }
    }
  });
}

/* The draw of a row that ends in a pass (F_END), by that pass's last
   block once every tile sum is in Q->tsum: ms_k_row's draw on the same
   sums, and the row's result. sh: room for the tile sums. */
__device__ MS_BLOCK_FN void end_draw(const Args &A, const Row &R, i32 r, const Sel *Q, const float *src, i32 V, u32 theta, i32 cut,
                         float M, float S, double *sh, DrawSh *s_draw) {
  const i32 E = tile_e(V), nt = (V + 32 * E - 1) / (32 * E);
  const double *gt = Q->tsum;
#pragma unroll 8
  for (i32 t = threadIdx.x; t < nt; t += blockDim.x) sh[t] = __ldcg(gt + t);   /* (L2: the other blocks' sums) */
  __syncthreads();
  const u64 pos = row_pos(A, R);
  i32 token;
  tiles_draw(sh, nt, 1, ms_uniform_dev(R.seed, pos, 0u), src, V, E, theta, cut, M, S, s_draw, &token);
  if (threadIdx.x == 0) put_result(A, R, r, token, token >= 0 ? 0 : ST_ALL_MASKED, 0.0f, 0, 0, 0, pos, 1);
}


#if MS_BINS_ON && MS_IN_UNIT(9)
/* P_PGATHER: the logits l (ids i) in [k_lo, k_hi) among the calling warp's
   32 elements appended to the row's list as keys (one atomic a warp).
   Every lane of the warp calls. */
__device__ __forceinline__ void pgather_list(Sel *Q, u32 *ck, i32 *cid, float l, i32 i, bool in) {
  const u32 bal = __ballot_sync(0xffffffffu, in);
  if (!bal) return;
  const i32 lane = (i32)threadIdx.x & 31, lead = __ffs((i32)bal) - 1;
  u32 base = 0u;
  if (lane == lead) base = atomicAdd(&Q->ncand, (u32)__popc(bal));
  base = __shfl_sync(0xffffffffu, base, lead);
  const u32 at = base + (u32)__popc(bal & ((1u << lane) - 1u));
  if (in && at < MS_PCAND) { ck[at] = fkey(l); cid[at] = i; }
}
/* P_PGATHER's weighing (tile_pass): the exact integer masses (fxw) of
   the kept ids in the tile, and of the ids >= lower and >= hi into *z and
   *a; the ids in [lo, hi) listed (every comparison on the floats:
   kept_floats). */
struct PgatherWeigh {
  Sel *Q;
  u32 *ck;
  i32 *cid;
  u64 *z, *a;
  float M, S, lower_f, lo_f, hi_f, thf, thu;
  i32 cut;
  template <bool U> __device__ __forceinline__ u64 operator()(Flag<U>, const F4 &v, i32 i, float th) const {
    const float l4[4] = { v.x, v.y, v.z, v.w };
    u64 t = 0ull;
#pragma unroll
    for (int c = 0; c < 4; c++) {
      const float l = l4[c];
      const bool in = l >= lower_f, above = l >= hi_f;
      const u64 f = in ? fxw(l, M, S) : 0ull;
      *z += f;
      *a += above ? f : 0ull;
      t += l >= (U ? th : i + c <= cut ? thf : thu) ? f : 0ull;
      pgather_list(Q, ck, cid, l, i + c, in && l >= lo_f && !above);
    }
    return t;
  }
};

/* P_PGATHER's last block, once every block's tile sums, list and masses
   are in: top_p's threshold tp, the smallest listed key whose mass
   strictly above (with all of the keys >= pk_hi) is < p * Z, by radix
   passes over the list with the exact integer masses (as the row's radix
   passes would find it); then the kept listed keys' draw weights added to
   their tiles (integer sums in Sel.hist, so in any order), and the row
   marked decided. Returns the kept set's theta, or 0 when the threshold
   lies outside the range (the radix passes take the row). Every thread
   calls; shd: MS_BINS doubles of shared scratch. */
__device__ __noinline__ u32 pgather_finish(u64 pcand, const Row &R, Sel *Q, i32 r, i32 V, float M, float S, u32 lower,
                                           double *shd, i32 *s_n) {
  const i32 tid = (i32)threadIdx.x, nt = (i32)blockDim.x;
  if (tid == 0) *s_n = (i32)*(const volatile u32 *)&Q->ncand;   /* (read once: thread 0 clears it) */
  __syncthreads();
  const i32 n = *s_n;
  const u32 *ck = (const u32 *)pcand + (u64)r * (2u * MS_PCAND);
  const i32 *cid = (const i32 *)(ck + MS_PCAND);
  const u32 k_lo = Q->pk_lo, span = Q->pk_hi - k_lo;
  const double Z = (double)__ldcg(&Q->pz) * (1.0 / MS_FX), above_hi = (double)__ldcg(&Q->pa) * (1.0 / MS_FX);
  const double target = (double)R.top_p * Z;
  double left = target - above_hi;   /* what the listed keys above the threshold must stay under */
  bool ok = n <= MS_PCAND && left > 0.0;
  u32 *lo = (u32 *)shd, *hi = lo + MS_BINS;
  const i32 nbits = span <= 1u ? 1 : 32 - __clz((i32)(span - 1u));
  i32 sh = max(nbits - 11, 0), sh_prev = 32;
  u32 base = 0u;
  while (ok) {
    const u32 pmask = sh_prev >= 32 ? 0u : ~((1u << sh_prev) - 1u);
    const u32 dmask = (1u << min(11, sh_prev - sh)) - 1u;
    for (i32 b = tid; b < MS_BINS; b += nt) lo[b] = hi[b] = 0u;
    __syncthreads();
    for (i32 k = tid; k < n; k += nt) {
      const u32 key = __ldcg(ck + k), off = key - k_lo;
      if ((off & pmask) == base) fx_add(lo, hi, (i32)((off >> sh) & dmask), fxw(unkey(key), M, S));
    }
    __syncthreads();
    double v[MS_BINS / MS_ST];
#pragma unroll
    for (i32 q = 0; q < MS_BINS / MS_ST; q++) v[q] = (double)fx_get(lo, hi, tid + q * nt) * (1.0 / MS_FX);
    __syncthreads();
    double w = 0.0;
#pragma unroll
    for (i32 q = 0; q < MS_BINS / MS_ST; q++) { shd[tid + q * nt] = v[q]; w += v[q]; }
    if (sh_prev == 32 && !(above_hi + bsum_d(w) >= target)) { ok = false; break; }   /* below the range */
    __syncthreads();
    double above;
    const i32 b = find_bin<double>(shd, MS_BINS, left, &above);
    left -= above;
    base |= (u32)b << sh;
    if (sh == 0) break;
    sh_prev = sh;
    sh = max(sh - 11, 0);
  }
  if (!ok) {
    if (tid == 0) { Q->ncand = 0u; Q->pbins = 0; }
    return 0u;
  }
  const u32 tp = k_lo + base;
  u32 theta = max(lower, tp);
  if (R.flags & F_HF) theta = max(theta, Q->t_minp);
  const i32 TILE = 32 * tile_e(V), n_tiles = (V + TILE - 1) / TILE;
  u64 *tacc = Q->hist;   /* zero: the last block of P_PBIN or ms_k_pbstats cleared it */
  for (i32 k = tid; k < n; k += nt) {
    const u32 key = __ldcg(ck + k);
    if (key < theta) continue;
    const i32 id = __ldcg(cid + k);
    const u64 f = fxw(unkey(key), M, S);   /* (P_PGATHER's tile masses) */
    if (f) atomicAdd((unsigned long long *)&tacc[id / TILE], (unsigned long long)f);
  }
  __threadfence();
  __syncthreads();
  for (i32 t = tid; t < n_tiles; t += nt) {
    const u64 add = __ldcg(tacc + t);
    if (add) { Q->tsum[t] = __ldcg(&Q->tsum[t]) + (double)add * (1.0 / MS_FX); tacc[t] = 0ull; }
  }
  if (tid == 0) { Q->tp = tp; Q->pdone = 1; Q->sums_done = 1; Q->ncand = 0u; }
  __threadfence();
  __syncthreads();
  return theta;
}
#endif

/* ---- the passes ------------------------------------------------------------ */

/* Whether row r has nothing left to do in pass ps (every block of the
   row alike), read before its parameters are copied: most of a row's
   later launches find it decided (a small top_k's count and top_p passes,
   a decided top_p's sums). The passes' kernels. */
__device__ __forceinline__ bool pass_skips(const Sel *Q, i32 ps) {
  if (Q->status != 0) return true;
  if (ps >= P_COUNT && ps <= P_COUNT + 2 && Q->cdone) return true;
  if (((ps >= P_MASS && ps <= P_MASS + 2) || ps == P_PBIN) && (Q->pdone || Q->cand)) return true;
  if (ps == P_CAND && Q->cand != 1) return true;
  if (ps == P_PGATHER && (!Q->pbins || Q->cand || Q->pdone)) return true;
  if (ps == P_SUMS && (Q->cand || Q->sums_done)) return true;
  return false;
}

/* Whether this block is the last of its row's n_parts blocks to arrive
   at the end of a pass (Sel.arrived), which then finishes the row: the
   block's writes are made visible before its arrival is counted. Every
   thread calls; s_last: a shared word. */
__device__ __forceinline__ bool last_to_arrive(Sel *Q, i32 n_parts, i32 *s_last) {
  __threadfence();   /* this block's results before the count that announces them */
  __syncthreads();
  if (threadIdx.x == 0) *s_last = arrive(&Q->arrived, n_parts);
  __syncthreads();
  return *s_last != 0;
}

/* A block of a pass's kernel: chunk [beg, end) of its row. */
struct PassBlock { i32 beg, end; const float *src; float M, S; int greedy; };
/* The start of both: the row's parameters into sR and the block's chunk;
   false when the row has nothing to do in this pass (every block of the
   row alike, and every thread of a block: the barrier inside is reached
   by all or none). */
__device__ __forceinline__ bool pass_begin(const Args &A, Sel *Q, Row *sR, PassBlock *pb) {
  const i32 r = blockIdx.x;
  if (pass_skips(Q, A.pass)) return false;
  row_to_shared(sR, A, r);
  __syncthreads();
  const Row &R = *sR;
  /* (a small top_k's rows are ms_k_tail's) */
  if (R.status != 0 || Q->status != 0 || (R.flags & F_KFAST)) return false;
  pb->greedy = (R.flags & F_GREEDY) != 0;
  pb->beg = (i32)blockIdx.y * A.chunk;
  pb->end = min(A.vocab, pb->beg + A.chunk);
  if (pb->beg > pb->end) pb->beg = pb->end;
  pb->src = row_src(A, R, r);
  pb->M = Q->P.m;
  pb->S = pb->greedy ? 1.0f : R.inv_temp;
  return true;
}

/* Six blocks per SM (40 registers): at 48 only five fitted, and the
   6 x SMs blocks of a large batch ran a second, nearly empty wave (top_p
   at batch 256 on an H200: 446 us instead of 409). MS_PASS_MINB and
   MS_ROW_MINB can be set through NVRTC's options to compare. */
#ifndef MS_PASS_MINB
#define MS_PASS_MINB 6
#endif

#if MS_IN_UNIT(4)
/* The draw's pass (Args.pass P_SUMS): block (r, c) stores the tile sums
   of the kept weight in chunk c of row r; the last block of the row to
   finish draws an F_END row. A kernel of its own (not a case of
   ms_k_pass) so that NVRTC compiles it beside ms_k_pass: the cold
   compile waits for the largest program. */
extern "C" __global__ void __launch_bounds__(MS_ST, MS_PASS_MINB) ms_k_sums(Args A) {
  ms_pdl_start();
  __shared__ double sh[MS_BINS];   /* (end_draw's tile sums) */
  __shared__ i32 s_last;
  __shared__ Row sR;
  __shared__ DrawSh s_draw;
  const i32 r = blockIdx.x;
  Sel *Q = (Sel *)A.sel + r;
  const i32 V = A.vocab;
  PassBlock pb;
  if (!pass_begin(A, Q, &sR, &pb)) return;
  const Row &R = sR;
  const int greedy = pb.greedy;
  const i32 beg = pb.beg, end = pb.end;
  const float *src = pb.src;
  const float M = pb.M, S = pb.S;
  const int lp_proc = A.out != 0 && R.logprobs >= 0 && (R.flags & F_LP_PROC) != 0;
  if (greedy && !lp_proc) return;
  if (Q->cand || (R.flags & F_LLAMA)) return;   /* ms_k_row resolves it from the candidates, or its list */
  if (Q->sums_done) return;   /* ms_k_pgather summed the tiles (and drew an F_END row) */
  const u32 theta = greedy ? MS_KEY_NEG_INF + 1u : sel_theta(R, Q);
  const i32 E = tile_e(V), TILE = 32 * E;
  /* beg is a multiple of TILE unless the chunk lies past the row's end */
  const i32 t_end = (end + TILE - 1) / TILE, t_beg = beg < end ? beg / TILE : t_end;
  const i32 cut = Q->cut;
  tile_sums(src, V, t_beg, t_end, E, theta, cut, M, S, [&](i32 t, double v) { Q->tsum[t] = v; });
  if (!(R.flags & F_END)) return;
  /* the last block to finish draws an F_END row (ms_k_row's draw, on the
     same tile sums) */
  if (!last_to_arrive(Q, A.n_parts, &s_last)) return;   /* (this block's tile sums first) */
  end_draw(A, R, r, Q, src, V, theta, cut, M, S, sh, &s_draw);
}
#endif

#if MS_BINS_ON && MS_IN_UNIT(9)
/* P_PGATHER (after top_p's bins gave a row a range of keys, P_PBIN's or
   the statistics'): block (r, c) stores the tile sums of the keys above
   the range in chunk c, lists the range's keys and adds up the exact
   masses; the row's last block selects the threshold on the list
   (pgather_finish) and draws an F_END row. A kernel of its own, in a
   program of its own: as a case of ms_k_sums it made that program
   compile in 1.65 s where it takes 0.6 without (one core). */
extern "C" __global__ void __launch_bounds__(MS_ST, MS_PASS_MINB) ms_k_pgather(Args A) {
  ms_pdl_start();
  __shared__ double sh[MS_BINS];   /* (pgather_finish's scratch, end_draw's tile sums) */
  __shared__ i32 s_last, s_n;
  __shared__ Row sR;
  __shared__ DrawSh s_draw;
  const i32 r = blockIdx.x, tid = threadIdx.x;
  Sel *Q = (Sel *)A.sel + r;
  const i32 V = A.vocab;
  PassBlock pb;
  if (!pass_begin(A, Q, &sR, &pb)) return;   /* (A.pass is P_PGATHER: pass_skips) */
  const Row &R = sR;
  if (pb.greedy || !Q->pbins || Q->cand || Q->pdone || (R.flags & F_LLAMA) || Q->sums_done) return;
  const i32 beg = pb.beg, end = pb.end;
  const float *src = pb.src;
  const float M = pb.M, S = pb.S;
  const u32 k_lo = Q->pk_lo, k_hi = Q->pk_hi;
  u32 theta = max(k_hi, (R.flags & F_HF) ? Q->t_minp : 0u);
  const i32 E = tile_e(V), TILE = 32 * E;
  const i32 t_end = (end + TILE - 1) / TILE, t_beg = beg < end ? beg / TILE : t_end;
  const i32 cut = Q->cut;
  const u32 lower = sel_t1(R, Q);
  u32 *ck = (u32 *)A.pcand + (u64)r * (2u * MS_PCAND);
  u64 z = 0ull, a = 0ull;
  {
    /* the tiles' exact integer masses (fxw) of the keys >= theta, Z's
       (keys >= lower) and the mass above the range (keys >= k_hi), the
       range's keys listed; every comparison on the floats (kept_floats) */
    float lower_f, thf, thu, lo_f, hi_f, unused;
    kept_floats(lower, &lower_f, &unused);
    kept_floats(theta, &thf, &thu);
    kept_floats(k_lo, &lo_f, &unused);
    kept_floats(k_hi, &hi_f, &unused);
    PgatherWeigh w = { Q, ck, (i32 *)(ck + MS_PCAND), &z, &a, M, S, lower_f, lo_f, hi_f, thf, thu, cut };
    tile_pass<u64, 2>(src, V, t_beg, t_end, E, cut, thf, thu, w, [&](i32 t, u64 v) { Q->tsum[t] = (double)v * (1.0 / MS_FX); });
  }
  u64 zt, at;
  bscan_excl(z, &zt);
  bscan_excl(a, &at);
  if (tid == 0) { atomicAdd((unsigned long long *)&Q->pz, zt); atomicAdd((unsigned long long *)&Q->pa, at); }
  /* the last block to finish decides, and draws an F_END row */
  if (!last_to_arrive(Q, A.n_parts, &s_last)) return;   /* (this block's tile sums first) */
  if (!(theta = pgather_finish(A.pcand, R, Q, r, V, M, S, lower, sh, &s_n))) return;
  if (R.flags & F_END) end_draw(A, R, r, Q, src, V, theta, cut, M, S, sh, &s_draw);
}
#endif

#if MS_IN_UNIT(1)
/* One full-row pass of the selection (Args.pass): block (r, c) reads
   chunk c of row r. P_COUNT + j and P_MASS + j (j = 0, 1, 2) are the
   radix passes of top_k (counts) and top_p (masses): each block adds its
   chunk's histogram into Sel.hist, and the last block of the row to finish (Sel.arrived)
   finds the bin, clears the histogram and stores the decision for the
   next launch. P_CAND gathers top_k's candidates. Rows that a pass does
   not concern return at once, all their blocks alike. */
extern "C" __global__ void __launch_bounds__(MS_ST, MS_PASS_MINB) ms_k_pass(Args A) {
  ms_pdl_start();
  __shared__ union { u32 u[MS_BINS]; double d[MS_BINS]; struct { u32 lo[MS_BINS], hi[MS_BINS]; } fx; } sh;
  __shared__ i32 s_last;
  __shared__ Row sR;
  const i32 r = blockIdx.x, tid = threadIdx.x;
  Sel *Q = (Sel *)A.sel + r;
  const i32 pass = A.pass;
  PassBlock pb;
  if (!pass_begin(A, Q, &sR, &pb)) return;
  const Row &R = sR;
  const int greedy = pb.greedy;
  const i32 beg = pb.beg, end = pb.end;
  const float *src = pb.src;
  const float M = pb.M, S = pb.S;

  if (pass == P_CAND) {
    /* (llama.cpp rows gather in ms_k_row, which resolves the others) */
    if (greedy || Q->cand != 1 || (R.flags & F_LLAMA)) return;
    gather_cands(src, beg, end, Q->cedge, &Q->ncand, Q->ck, Q->cid);
    return;
  }

  /* the radix passes */
  const int joint = (R.flags & F_JOINT) != 0;
  /* top_k's candidates finish the selection in ms_k_row, which has
     neither SGLang's position cut nor HF's epsilon and eta */
  const int no_cand = joint || R.eps_cut > 0.0f || R.eta_cut > 0.0f;
  const int count = pass < P_MASS;
  const i32 j = pass - (count ? P_COUNT : P_MASS);
  if (greedy || j < 0 || j > 2) return;
  if (count ? (R.top_k <= 0 || Q->cdone) : (!(R.top_p < 1.0f) || Q->pdone || Q->cand)) return;
  const int shift = j == 0 ? 21 : j == 1 ? 10 : 0;
  const i32 nb = j == 2 ? 1024 : 2048;
  const u32 lower = j > 0 ? Q->lower : count ? sel_lower(R, Q) : sel_t1(R, Q);
  const u32 prefix = j > 0 ? Q->prefix : 0u, pm = j > 0 ? Q->pm : 0u;
  for (i32 b = tid; b < nb; b += blockDim.x) { if (count) sh.u[b] = 0u; else sh.fx.lo[b] = sh.fx.hi[b] = 0u; }
  __syncthreads();
  row_for<4>(src, beg, end, [&](i32, float l) {
    const u32 key = fkey(l);
    if (key >= lower && (key & pm) == prefix) {
      const i32 b = (i32)((key >> shift) & (u32)(nb - 1));
      if (count) atomicAdd(&sh.u[b], 1u);
      else fx_add(sh.fx.lo, sh.fx.hi, b, fxw(l, M, S));
    }
  });
  __syncthreads();
  for (i32 b = tid; b < nb; b += blockDim.x) {
    const u64 v = count ? (u64)sh.u[b] : fx_get(sh.fx.lo, sh.fx.hi, b);
    if (v) atomicAdd((unsigned long long *)&Q->hist[b], (unsigned long long)v);
  }
  if (!last_to_arrive(Q, A.n_parts, &s_last)) return;   /* (this block's bins first) */

  /* the last block: the row's histogram is complete (the last pass of
     an F_JOINT top_p row keeps it until the bin's integer mass is read) */
  u64 *gh = Q->hist;
  const int keep_raw = joint && !count && j == 2;
  /* read from L2 (the other blocks' atomics are there), eight loads in
     flight per thread: one volatile load after another cost a memory
     round trip each, several microseconds per pass at batch 1 */
  for (i32 b0 = tid; b0 < nb; b0 += 8 * (i32)blockDim.x) {
    u64 v[8];
#pragma unroll
    for (int k = 0; k < 8; k++) { const i32 b = b0 + k * (i32)blockDim.x; v[k] = b < nb ? __ldcg(gh + b) : 0ull; }
#pragma unroll
    for (int k = 0; k < 8; k++) {
      const i32 b = b0 + k * (i32)blockDim.x;
      if (b < nb) {
        sh.d[b] = count ? (double)v[k] : (double)v[k] * (1.0 / MS_FX);
        if (!keep_raw) gh[b] = 0ull;
      }
    }
  }
  __syncthreads();
  double target = Q->target;
  if (j == 0) {
    double tot = 0.0;
    for (i32 b = tid; b < nb; b += blockDim.x) tot += sh.d[b];
    tot = bsum_d(tot);
    if (count && tot <= (double)R.top_k) {
      /* at most k keys qualify: all are kept (candidates when few) */
      if (tid == 0) {
        Q->tk = lower; Q->cdone = 1;
        if (tot <= (double)MS_CAND && !no_cand) { Q->cand = 1; Q->cedge = lower; }
      }
      return;
    }
    target = count ? (double)R.top_k : (double)R.top_p * tot;
    /* SGLang keeps a position iff the mass before it is <= p: the
       threshold is the smallest value whose larger mass is < the next
       double above p * Z */
    if (!count && joint) target = __longlong_as_double(__double_as_longlong(target) + 1);
  }
  double above;
  const i32 b = find_bin<double>(sh.d, nb, target, &above);
  u64 raw_b = 0ull;
  if (keep_raw) {
    raw_b = __ldcg(gh + b);
    __syncthreads();
    for (i32 bb = tid; bb < nb; bb += blockDim.x) gh[bb] = 0ull;
  }
  if (count && j == 0 && above + sh.d[b] <= (double)MS_CAND && !no_cand) {
    /* the keys from bin b up hold the k largest and are few: P_CAND
       gathers them and ms_k_row finishes top_k and top_p on them */
    if (tid == 0) { Q->cand = 1; Q->cedge = max(lower, (u32)b << shift); Q->cdone = 1; }
    return;
  }
  if (tid == 0) {
    const u32 np = prefix | ((u32)b << shift), npm = pm | ((u32)(nb - 1) << shift);
    Q->lower = lower; Q->prefix = np; Q->pm = npm; Q->target = target - above;
    if (j == 2) {
      if (count) { Q->tk = np; Q->cdone = 1; }
      else { Q->tp = np; Q->pdone = 1; }
      if (joint) {
        /* what the position cut needs (ms_k_ties): top_k keeps the k -
           (larger) left to select of the ties; top_p's is worked out
           there from what is left of the target and the ties' mass */
        const double rest = target - above;
        if (count) { if (rest < sh.d[b]) Q->kkeep = (u32)rest; }
        else { Q->prest = rest; Q->praw = raw_b; }
      }
    }
  }
}
#endif

#if MS_BINS_ON && MS_IN_UNIT(10)
/* P_PBIN, top_p's bins of an F_TOPP_BINS row the statistics did not
   count (F_PB_STATS), before the radix passes: block (r, c) counts the
   keys >= the row's lower bound in chunk c into MS_PB_NB bins of the
   scaled distance below the max (topp_bin), added into Sel.hist; the
   row's last block finds the bins that may hold the threshold
   (pb_window) and their keys' range for P_PGATHER. A kernel of its own,
   in a program of its own: as a case of ms_k_pass it made that program
   compile in 1.15 s where it takes 0.6 without (one core). */
extern "C" __global__ void __launch_bounds__(MS_ST, MS_PASS_MINB) ms_k_pbin(Args A) {
  ms_pdl_start();
  __shared__ u32 hc[MS_PB_NB];
  __shared__ i32 s_last;
  __shared__ Row sR;
  const i32 r = blockIdx.x, tid = threadIdx.x;
  Sel *Q = (Sel *)A.sel + r;
  PassBlock pb;
  if (!pass_begin(A, Q, &sR, &pb)) return;   /* (A.pass is P_PBIN: pass_skips) */
  const Row &R = sR;
  const float *src = pb.src;
  const float M = pb.M, S = pb.S;
  if (pb.greedy || !(R.top_p < 1.0f) || Q->pdone || Q->cand) return;
  /* (F_PB_STATS: the statistics counted them) */
  if (!(R.flags & F_TOPP_BINS) || (R.flags & F_PB_STATS) || sel_t1(R, Q) > fkey(M)) return;
  const u32 lower = sel_t1(R, Q);
  for (i32 b = tid; b < MS_PB_NB; b += blockDim.x) hc[b] = 0u;
  __syncthreads();
  u32 far = 0u;   /* the last bin's count (16 or more below the max: most of a peaked row), in registers */
  float lower_f, unused;
  kept_floats(lower, &lower_f, &unused);
  row_for<4>(src, pb.beg, pb.end, [&](i32, float l) {
    if (l >= lower_f) {
      const i32 b = topp_bin(l, M, S);
      if (b == 0) far++; else atomicAdd(&hc[b], 1u);
    }
  });
  far = bsum_u(far);   /* (syncs) */
  if (tid == 0) hc[0] += far;
  __syncthreads();
  for (i32 b = tid; b < MS_PB_NB; b += blockDim.x) if (hc[b]) atomicAdd((u32 *)Q->hist + b, hc[b]);
  if (!last_to_arrive(Q, A.n_parts, &s_last)) return;   /* (this block's bins first) */
  /* the keys that may hold the threshold, for P_PGATHER */
  u32 *gc = (u32 *)Q->hist;
  u32 v[MS_PB_NB / MS_ST];
#pragma unroll
  for (i32 q = 0; q < MS_PB_NB / MS_ST; q++) v[q] = __ldcg(gc + tid + q * MS_ST);
#pragma unroll
  for (i32 q = 0; q < MS_PB_NB / MS_ST; q++) { hc[tid + q * MS_ST] = v[q]; gc[tid + q * MS_ST] = 0u; }
  __syncthreads();
  i32 b_lo, b_hi;
  const u32 n = pb_window(hc, R.top_p, 0.0, 0u, 0.0, &b_lo, &b_hi);
  if (tid == 0) {
    const u32 kmax = fkey(M);
    Q->pk_lo = topp_key(lower, kmax, b_lo, M, S);
    Q->pk_hi = b_hi >= MS_PB_NB - 1 ? kmax + 1u : topp_key(lower, kmax, b_hi + 1, M, S);
    Q->ncand = 0u; Q->pbins = n > 0u && n <= (u32)MS_PCAND;
  }
}
#endif

#if MS_IN_UNIT(3)
/* SGLang rows (F_JOINT) whose cut falls inside the tie at theta keep the
   first `keep` tied ids; the others return at once, all their blocks
   alike. Block (r, c) counts the ties of chunk c's draw tiles (into
   Q->tsum, which P_SUMS overwrites next); the last block of the row finds
   the tile of the keep-th tie, one warp walks it, and Q->cut gets its
   id. Between top_p's radix passes and P_SUMS. (A kernel of its own, in
   the small program: inside ms_k_pass it made that program's cold compile
   half again as long.) */
extern "C" __global__ void __launch_bounds__(MS_ST) ms_k_ties(Args A) {
  ms_pdl_start();
  __shared__ i32 s_last, s_tile, s_id;
  __shared__ u32 s_before;
  __shared__ Row sR;
  const i32 r = blockIdx.x, c = blockIdx.y, tid = threadIdx.x;
  row_to_shared(&sR, A, r);
  __syncthreads();
  const Row &R = sR;
  Sel *Q = (Sel *)A.sel + r;
  const i32 V = A.vocab;
  if (R.status != 0 || Q->status != 0 || (R.flags & F_GREEDY) || !(R.flags & F_JOINT)) return;
  const u32 theta = sel_theta(R, Q);
  u32 keep = R.top_k > 0 && Q->tk == theta ? Q->kkeep : 0xffffffffu;
  if (R.top_p < 1.0f && Q->tp == theta && Q->praw) {
    /* top_p keeps the ties whose mass before them, (larger) + q w, stays
       under the target: q < rest / w */
    const float M = Q->P.m, S = R.inv_temp;
    const u64 f = fxw(unkey(theta), M, S);
    if (f) {
      const double w = (double)f * (1.0 / MS_FX), rest = Q->prest;
      const u64 n_eq = Q->praw / f;
      double q = ceil(rest / w);
      if (q > 0.0 && (q - 1.0) * w >= rest) q -= 1.0;
      else if (q * w < rest) q += 1.0;
      if (q < 1.0) q = 1.0;   /* the threshold's first position always stays (rounding) */
      if (q < (double)n_eq && (u32)q < keep) keep = (u32)q;
    }
  }
  if (keep == 0xffffffffu) return;
  i32 beg = c * A.chunk, end = min(V, beg + A.chunk);
  if (beg > end) beg = end;
  const float *src = row_src(A, R, r);
  const i32 E = tile_e(V), TILE = 32 * E;
  const i32 t_end = (end + TILE - 1) / TILE, t_beg = beg < end ? beg / TILE : t_end;
  const i32 lane = tid & 31, nw = (i32)blockDim.x >> 5;
  u32 *tc = (u32 *)Q->tsum;
  for (i32 t = t_beg + (tid >> 5); t < t_end; t += nw) {
    u32 n = 0u;
    for (i32 k = 0; k < E; k++) { const i32 i = t * TILE + k * 32 + lane; if (i < V && fkey(src[i]) == theta) n++; }
    n = warp_sum(n);
    if (lane == 0) tc[t] = n;
  }
  if (!last_to_arrive(Q, A.n_parts, &s_last)) return;   /* (this block's counts first) */
  const i32 nt = (V + TILE - 1) / TILE, per = (nt + (i32)blockDim.x - 1) / (i32)blockDim.x;
  const volatile u32 *gc = tc;
  u32 run = 0u, total;
  for (i32 k = 0; k < per; k++) { const i32 t = tid * per + k; if (t < nt) run += gc[t]; }
  u32 before = bscan_excl(run, &total);
  if (tid == 0) { s_tile = -1; s_id = 0x7fffffff; s_before = 0u; }
  __syncthreads();
  for (i32 k = 0; k < per; k++) {   /* the tile where the running count reaches keep */
    const i32 t = tid * per + k;
    if (t >= nt) break;
    const u32 n = gc[t];
    if (before < keep && before + n >= keep) { s_tile = t; s_before = before; }
    before += n;
  }
  __syncthreads();
  if (tid < 32 && s_tile >= 0) {
    const i32 t = s_tile;
    u32 seen = s_before;
    for (i32 k = 0; k < E; k++) {
      const i32 i = t * TILE + k * 32 + lane;
      const unsigned hit = __ballot_sync(0xffffffffu, i < V && fkey(src[i]) == theta);
      const u32 n = (u32)__popc(hit);
      if (seen + n >= keep) {
        unsigned h = hit;
        for (u32 q = seen + 1u; q < keep; q++) h &= h - 1u;   /* drop the ties before the keep-th */
        if (lane == 0) s_id = t * TILE + k * 32 + (__ffs(h) - 1);
        break;
      }
      seen += n;
    }
  }
  __syncthreads();
  if (tid == 0) Q->cut = s_id;
}
#endif

/* ---- HF epsilon and eta ------------------------------------------------------
   A cut on the current distribution (what top_k, top_p and min_p kept):
   drop p < cutoff, where eta's cutoff is min(eta, sqrt(eta) e^-H), H the
   entropy. Both are weight thresholds, cut * Z rounded up to a float (Z
   the kept weight, capped at the max's weight, 1, so the max stays), then
   a key (minp_key). Each block sums the exact weights of its chunk's
   draw tiles (warp by warp, as tile_sums, so the sums do not depend on
   the split) into Q->tsum, and for eta w * y, y the scaled logit, into
   Q->hist (zeroed again after); the row's last block adds the tiles in a
   fixed order and moves Q->t_eps. P_SUMS then sums the kept set again.
   A kernel of the small program (block (r, c): chunk c of row r, as
   ms_k_pass; Args.pass P_EPS or P_ETA): inside ms_k_pass it made the
   program the figures run compile a sixth longer. */
#if MS_IN_UNIT(3)
extern "C" __global__ void __launch_bounds__(MS_ST) ms_k_eps(Args A) {
  ms_pdl_start();
  __shared__ i32 s_last;
  __shared__ Row sR;
  const i32 r = blockIdx.x, c = blockIdx.y, tid = threadIdx.x, V = A.vocab;
  row_to_shared(&sR, A, r);
  __syncthreads();
  const Row &R = sR;
  Sel *Q = (Sel *)A.sel + r;
  if (R.status != 0 || Q->status != 0) return;
  const int eta = A.pass == P_ETA;
  const i32 beg0 = c * A.chunk, end = min(V, beg0 + A.chunk), beg = min(beg0, end);
  const float *src = row_src(A, R, r);
  const float M = Q->P.m, S = R.inv_temp;
  const i32 lane = tid & 31, nw = (i32)blockDim.x >> 5;
  const float cutoff = eta ? R.eta_cut : R.eps_cut;
  if ((R.flags & F_GREEDY) || !(cutoff > 0.0f) || Q->cand) return;
  const u32 theta = sel_theta(R, Q);
  const i32 E = tile_e(V), TILE = 32 * E, nt = (V + TILE - 1) / TILE;
  const i32 t_end = (end + TILE - 1) / TILE, t_beg = beg < end ? beg / TILE : t_end;
  double *ty = (double *)Q->hist;
  for (i32 t = t_beg + (tid >> 5); t < t_end; t += nw) {
    double sw = 0.0, sy = 0.0;
    for (i32 j = 0; j < E; j++) {
      const i32 i = t * TILE + j * 32 + lane;
      const float l = i < V ? src[i] : ms_neg_inf();
      if (l > ms_neg_inf() && kept_at(fkey(l), i, theta, 0x7fffffff)) {
        const float y = __fmul_rn(__fsub_rn(l, M), S);
        const float w = ms_expf_dev(y);
        sw += (double)w;
        sy += (double)w * (double)y;
      }
    }
    sw = warp_sum(sw);
    sy = warp_sum(sy);
    if (lane == 0) { Q->tsum[t] = sw; if (eta) ty[t] = sy; }
  }
  if (!last_to_arrive(Q, A.n_parts, &s_last)) return;   /* (this block's tiles first) */
  const i32 per = (nt + (i32)blockDim.x - 1) / (i32)blockDim.x;
  double zw = 0.0, zy = 0.0;
  const volatile double *gw = Q->tsum, *gy = ty;
  for (i32 k = tid * per; k < min(nt, (tid + 1) * per); k++) { zw += gw[k]; if (eta) zy += gy[k]; }
  zw = bsum_d(zw);
  if (eta) zy = bsum_d(zy);
  if (eta) for (i32 b = tid; b < MS_BINS; b += blockDim.x) Q->hist[b] = 0ull;   /* zero between passes */
  if (tid == 0) {
    double cut = (double)cutoff;
    if (eta) {
      const double h = log(zw) - zy / zw, alt = sqrt(cut) * exp(-h);
      if (alt < cut) cut = alt;
    }
    const double want = cut * zw;
    float tc = (float)want;
    if ((double)tc < want) tc = __uint_as_float(__float_as_uint(tc) + 1u);   /* keep p >= cut exactly */
    if (tc > 1.0f) tc = 1.0f;   /* the max (weight 1) stays */
    Q->t_eps = max(Q->t_eps, minp_key(M, S, tc));
  }
}
#endif

#if MS_IN_UNIT(5)
/* e[i] = exp(v[i] - v[0]) for i < n (one thread), and their sum: llama.cpp's
   list weights relative to its first (largest) value. Not inlined: two
   callers, and the exp polynomial once is a shorter compile. */
/* Not inlined for the same reason: three callers in ms_k_list. */
__device__ __noinline__ double list_log(double x) { return log(x); }

__device__ __noinline__ double list_weights(const float *v, float *e, i32 n) {
  double z = 0.0;
  for (i32 i = 0; i < n; i++) { e[i] = ms_expf_dev(__fsub_rn(v[i], v[0])); z += (double)e[i]; }
  return z;
}

/* llama.cpp rows (F_LLAMA), one block each, after the count passes and
   before ms_k_row (which reads the token from the Sel state and adds raw
   logprobs): the top_k list
   (the keys above the count passes' threshold and its ties, lowest ids
   first, gathered in id order; ordered by value descending, id
   ascending; exactly k), then the stages after top_k as the CPU runs them
   on its list (src/impl_chain.c: float softmax and running sum for top_p,
   the host's logf(min_p) for min_p, a float division for T), then the
   weights exp(l - l_0), the draw walking the list in its order, the
   probabilities and the processed logprobs (log of the list's weights;
   rank among them; the first N by logprob, ties by id). A kernel of its
   own in the small program: inside ms_k_row it made the largest program
   a seventh longer to compile. */
extern "C" __global__ void __launch_bounds__(MS_NT) ms_k_list(Args A) {
  ms_pdl_start();
  __shared__ Row sR;
  __shared__ u32 gk[2 * MS_CAND];
  __shared__ i32 gi[2 * MS_CAND];
  __shared__ float s_v[MS_CAND], s_e[MS_CAND];
  __shared__ i32 s_i[MS_CAND];
  __shared__ i32 s_n, s_pick;
  __shared__ double s_z;
  const i32 r = blockIdx.x, tid = threadIdx.x, V = A.vocab;
  row_to_shared(&sR, A, r);
  __syncthreads();
  const Row &R = sR;
  Sel *Q = (Sel *)A.sel + r;
  if (!(R.flags & F_LLAMA) || R.status != 0 || Q->status != 0) return;
  const float *src = row_src(A, R, r);
  const u64 pos = row_pos(A, R);
  const i32 K = R.top_k;
  const u32 edge = Q->cand ? Q->cedge : Q->tk;   /* the k-th largest key, or a bound below it with few keys above */
  u32 n_all = 0u, n_eq = 0u;
  /* F_SIGMA: the finite logits' moments about the max on the way (as
     the CPU's ms__sigma_cut_row: float differences and squares, summed
     here in double) */
  const int sig = (R.flags & F_SIGMA) != 0;
  const float M = Q->P.m;
  double m1 = 0.0, m2 = 0.0;
  u32 mc = 0u;
  for (i32 base = 0; base < V; base += blockDim.x) {
    const i32 i = base + tid;
    const float x = i < V ? src[i] : 0.0f;
    const u32 key = i < V ? fkey(x) : 0u;
    if (sig && i < V && x > ms_neg_inf()) {
      const float d = __fsub_rn(x, M);
      m1 += (double)d;
      m2 += (double)__fmul_rn(d, d);
      mc++;
    }
    const u32 eq = (i < V && key == edge) ? 1u : 0u;
    u32 tot_eq, tot;
    const u32 eq_pos = bscan_excl(eq, &tot_eq);
    const u32 take = (i < V && (key > edge || (eq && n_eq + eq_pos < (u32)K))) ? 1u : 0u;
    const u32 at = bscan_excl(take, &tot);
    if (take && n_all + at < 2u * MS_CAND) { gk[n_all + at] = key; gi[n_all + at] = i; }
    n_all += tot;
    n_eq += tot_eq;
  }
  float s_cut = -3.40282347e38f;   /* -FLT_MAX: nothing below it */
  if (sig) {
    m1 = bsum_d(m1);
    m2 = bsum_d(m2);
    mc = bsum_u(mc);
    if (mc > 0u) {
      const double mean = m1 / (double)mc;
      double var = m2 / (double)mc - mean * mean;
      /* past FLT_MAX llama.cpp's float sums make the deviation inf: no cut
         (as the CPU's ms__sigma_cut_row) */
      const bool over = !(var * (double)mc <= 3.4028234663852886e38) || !(fabs((double)M + mean) * (double)mc <= 3.4028234663852886e38);
      if (var < 0.0) var = 0.0;
      if (!over) s_cut = __fsub_rn(M, __fmul_rn(R.ll_sigma, (float)sqrt(var)));
    }
  }
  __syncthreads();
  const i32 n_g = (i32)min(n_all, 2u * MS_CAND);
  for (i32 j = tid; j < n_g; j += blockDim.x) {
    const u32 kj = gk[j];
    const i32 ij = gi[j];
    i32 at = 0;
    for (i32 q = 0; q < n_g; q++) at += gk[q] > kj || (gk[q] == kj && gi[q] < ij);
    if (at < K) { s_i[at] = ij; s_v[at] = src[ij]; }
  }
  __syncthreads();
  if (tid == 0) {
    /* the list: values s_v, ids s_i, n of them; size is llama.cpp's array
       size (the list with its -inf entries), which min_keep, XTC and the
       dynamic temperature read */
    i32 n = min(n_g, K), size = K;
    const i32 mk = R.ll_min_keep;
    if (sig) {
      /* top-n-sigma before top_k: the list keeps what is at or above the
         cut (its size stays k, as llama.cpp's array keeps the -inf ones) */
      i32 j = 0;
      for (i32 i = 0; i < n; i++) if (s_v[i] >= s_cut) { s_v[j] = s_v[i]; s_i[j] = s_i[i]; j++; }
      n = j;
    }
    for (i32 code = R.ll_stages; code; code >>= 3) {
      const i32 st = code & 7;
      if (st == 1 && n > 0) {
        /* top_p: the first prefix whose float running sum of the float
           softmax reaches p, at least min_keep */
        const float z = (float)list_weights(s_v, s_e, n);
        float cum = 0.0f;
        i32 i;
        for (i = 0; i < n; i++) {
          cum = __fadd_rn(cum, __fdiv_rn(s_e[i], z));
          if (cum >= R.ll_top_p && i + 1 >= mk) { n = i + 1; size = i + 1; break; }
        }
        if (i == n && cum >= R.ll_top_p && mk > n && mk < size) size = mk;
      } else if (st == 2 && n > 0) {
        /* min_p: logits >= max + ln(min_p), at least min_keep, at least one */
        const float cut = __fadd_rn(s_v[0], R.ll_log_min_p);
        i32 c = 0;
        while (c < n && s_v[c] >= cut) c++;
        i32 kept = max(c, min(mk, size));
        if (kept < 1) kept = 1;
        if (n > kept) n = kept;
        size = kept;
      } else if (st == 3) {
        /* the temperature (T <= 0 keeps the first), or the dynamic one:
           T scaled by the list's entropy relative to the uniform over size */
        float T = R.ll_temp;
        int apply = 1;
        if (R.ll_dyn_range > 0.0f) {
          if (size <= 1) apply = 0;
          else {
            const float lo = fmaxf(__fsub_rn(T, R.ll_dyn_range), 0.0f), hi = __fadd_rn(T, R.ll_dyn_range);
            const float hmax = -logf(__fdiv_rn(1.0f, (float)size));
            float h = 0.0f;
            if (n > 0) {
              const double z = (double)(float)list_weights(s_v, s_e, n);
              if (z > 0.0) {
                double mass = 0.0, wd = 0.0;
                for (i32 i = 0; i < n; i++) {
                  const float pi = __fdiv_rn(s_e[i], (float)z);
                  if (pi >= 1.40129846e-45f) { mass += (double)pi; wd += (double)__fmul_rn(pi, __fsub_rn(s_v[i], s_v[0])); }
                }
                h = (float)(list_log(z) * mass - wd);
              }
            }
            T = __fadd_rn(lo, __fmul_rn(__fsub_rn(hi, lo), powf(__fdiv_rn(h, hmax), R.ll_dyn_exp)));
          }
        }
        if (apply) {
          if (T <= 0.0f) { if (n > 1) n = 1; }
          else for (i32 i = 0; i < n; i++) s_v[i] = __fdiv_rn(s_v[i], T);
        }
      } else if (st == 4 && n > 0) {
        /* typical: tokens by ascending |E_p[l] - l| (a merge outward from
           the minimum along the sorted list) until the mass exceeds p, at
           least min_keep; they are a contiguous run of the list */
        const float z = (float)list_weights(s_v, s_e, n);
        double el = 0.0, pz = 0.0;
        for (i32 i = 0; i < n; i++) { s_e[i] = __fdiv_rn(s_e[i], z); el += (double)s_e[i] * (double)s_v[i]; pz += (double)s_e[i]; }
        el /= pz;
        float *sc = (float *)gk;   /* the gather's scratch is free */
        i32 lo = 0;
        for (i32 i = 0; i < n; i++) sc[i] = s_e[i] > 0.0f ? (float)fabs(el - (double)s_v[i]) : ms_pos_inf();
        for (i32 i = 1; i < n; i++) if (sc[i] < sc[lo]) lo = i;
        i32 a = lo, b = lo, kept = -1;
        float cum = 0.0f;
        for (i32 i = 0; i < n; i++) {
          i32 j;
          if (i == 0) { j = lo; b = lo + 1; }
          else if (a > 0 && (b == n || sc[a - 1] <= sc[b])) j = --a;   /* equal scores: the likelier first */
          else j = b++;
          cum = __fadd_rn(cum, s_e[j]);
          if (cum > R.ll_typical && (mk == 0 || i >= mk - 1)) { kept = i + 1; break; }
        }
        if (kept >= 0) {
          const i32 hi = b;
          lo = a;
          if (lo > 0 && s_v[lo - 1] == s_v[lo]) {
            /* the cut split a run of equal logits reached from below: the
               kept part of the run takes the run's lowest ids */
            i32 r0 = lo, r1 = lo;
            i32 *tmp = gi;
            while (r0 > 0 && s_v[r0 - 1] == s_v[lo]) r0--;
            while (r1 + 1 < hi && s_v[r1 + 1] == s_v[lo]) r1++;
            const i32 shift = r1 - lo + 1;
            for (i32 j = r0; j <= r1; j++) tmp[j - r0] = s_i[j];
            for (i32 j = 0; j <= r1 - r0; j++) s_i[j < shift ? lo + j : r0 + j - shift] = tmp[j];
          }
          if (lo > 0) for (i32 j = 0; j < hi - lo; j++) { s_v[j] = s_v[lo + j]; s_i[j] = s_i[lo + j]; }
          n = hi - lo;
          size = kept;
        }
      } else if (st == 6 && size > 1 && n > 0) {
        /* top-n-sigma on the list: max - n * the standard deviation of
           its logits (float sums in order, as llama.cpp) */
        float sum = 0.0f, acc = 0.0f;
        for (i32 i = 0; i < n; i++) sum = __fadd_rn(sum, s_v[i]);
        const float mean = __fdiv_rn(sum, (float)n);
        for (i32 i = 0; i < n; i++) { const float d = __fsub_rn(s_v[i], mean); acc = __fadd_rn(acc, __fmul_rn(d, d)); }
        const float sd = (float)sqrt((double)__fdiv_rn(acc, (float)n));
        const float cut = __fsub_rn(s_v[0], __fmul_rn(R.ll_sigma, sd));
        while (n > 0 && s_v[n - 1] < cut) n--;
      } else if (st == 5 && size >= 2) {
        /* XTC: with probability p, every token with p >= threshold but the
           least likely of them goes, if min_keep are left */
        const float coin = (float)ms_uniform_dev(R.seed, pos, 1u);
        if (!(coin > R.ll_xtc_p) && n > 0) {
          const float z = (float)list_weights(s_v, s_e, n);
          i32 last = 0;
          for (i32 i = 0; i < n && __fdiv_rn(s_e[i], z) >= R.ll_xtc_t; i++) last = i;
          if (last > 0 && size - last >= mk) {
            for (i32 j = 0; j < n - last; j++) { s_v[j] = s_v[last + j]; s_i[j] = s_i[last + j]; }
            n -= last;
            size -= last;
          }
        }
      }
    }
    /* the weights relative to the list's first (its maximum), the draw in
       list order: the first whose running sum exceeds u * z, else the last
       of positive weight */
    const double zs = list_weights(s_v, s_e, n);
    i32 pick = -1;
    if (n == 1) pick = 0;
    else if (n > 1) {
      const double target = ms_uniform_dev(R.seed, pos, 0u) * zs;
      double cum = 0.0;
      for (i32 i = 0; i < n; i++) {
        if (s_e[i] > 0.0f) pick = i;
        cum += (double)s_e[i];
        if (cum > target) { pick = i; break; }
      }
    }
    if (R.given >= 0 && !A.probs && zs > 0.0) {
      /* a scored row: the given token's place in the list (-1: the chain
         dropped it, or its weight is 0; the list's others still report) */
      pick = -1;
      for (i32 i = 0; i < n && pick < 0; i++) if (s_i[i] == R.given && s_e[i] > 0.0f) pick = i;
    }
    if (!(zs > 0.0)) pick = -1;
    s_n = n; s_z = zs; s_pick = pick;
  }
  __syncthreads();
  const i32 n = s_n, pick = s_pick;
  const int scored = R.given >= 0 && !A.probs && s_z > 0.0;
  const double z = s_z;
  float *probs = (float *)A.probs;
  if (probs) {
    float *pr = probs + (u64)r * A.probs_stride;
    for (i32 i = tid; i < V; i += blockDim.x) pr[i] = 0.0f;
    __syncthreads();
    if (pick >= 0) for (i32 i = tid; i < n; i += blockDim.x) pr[s_i[i]] = (float)((double)s_e[i] / z);
  }
  const int lp_proc = A.out != 0 && R.logprobs >= 0 && (R.flags & F_LP_PROC) != 0;
  if (tid == 0) { Q->ll_token = scored ? R.given : pick >= 0 ? s_i[pick] : -1; Q->ll_lp = 0.0f; Q->ll_rank = 0; Q->ll_ntop = 0; }
  if (lp_proc && (pick >= 0 || scored)) {
    /* the list's logprobs (into s_v, which the weights replaced) */
    const double logz = list_log(z);
    for (i32 i = tid; i < n; i += blockDim.x) s_v[i] = s_e[i] > 0.0f ? (float)(list_log((double)s_e[i]) - logz) : ms_neg_inf();
    __syncthreads();
    if (tid == 0 && pick >= 0) {
      const float ep = s_e[pick];
      i32 rk = 0;   /* the list's weights >= the token's (vLLM v1: itself and its ties) */
      for (i32 i = 0; i < n; i++) rk += s_e[i] >= ep;
      Q->ll_lp = s_v[pick];
      Q->ll_rank = rk;
    } else if (tid == 0) { Q->ll_lp = ms_neg_inf(); Q->ll_rank = V; }   /* (a scored token the chain dropped) */
    const i32 m = min(min(n, R.logprobs), min(A.top_stride, MS_CAND));
    if (A.top && m > 0) {
      TopEntry *top = (TopEntry *)A.top + (u64)r * (u64)A.top_stride;
      for (i32 j = tid; j < m; j += blockDim.x) {
        /* the first m of the list, placed by (logprob descending, id ascending) */
        const float lj = s_v[j];
        i32 at = 0;
        for (i32 q = 0; q < m; q++) at += s_v[q] > lj || (s_v[q] == lj && s_i[q] < s_i[j]);
        top[at].token = s_i[j];
        top[at].logprob = lj;
      }
      if (tid == 0) Q->ll_ntop = m;
    }
  }
}
#endif

/* ---- the row kernel -------------------------------------------------------- */


/* Two blocks per SM (32 registers, a few spilled on paths that are not
   hot): a batch of 256 rows then runs in one wave instead of two, and the
   top_k rows' candidate step took 52 us of 329 at batch 256 on an H200.
   (ms_k_lp's too.) */
#ifndef MS_ROW_MINB
#define MS_ROW_MINB 2
#endif
#if MS_IN_UNIT(0)
extern "C" __global__ void __launch_bounds__(MS_NT, MS_ROW_MINB) ms_k_row(Args A) {
  ms_pdl_start();
  __shared__ Row sR;
  __shared__ Part sP;
  __shared__ i32 s_status;
  __shared__ u64 s_pos;
  __shared__ i32 s_token;
  __shared__ DrawSh s_draw;
  __shared__ union { double t[MS_MAXT]; struct { u32 key[MS_CAND]; i32 id[MS_CAND]; double w[MS_CAND]; } c; } s_buf;
  __shared__ u32 s_ncand;
  __shared__ i32 s_ncand_i;
  __shared__ double s_start;

  const i32 r = blockIdx.x;
  const i32 V = A.vocab;
  const i32 tid = threadIdx.x;
  row_to_shared(&sR, A, r);
  __syncthreads();
  const Row &R = sR;
  Out *out = A.out ? (Out *)A.out + r : (Out *)0;
  if (R.flags & F_END) return;   /* ms_k_stats or P_SUMS wrote its result */

  /* the statistics and the selection's state, from ms_k_stats and ms_k_pass */
  const Sel *Q = (const Sel *)A.sel + r;
  if (tid == 0) {
    sP = Q->P;
    i32 st = R.status;
    if (st == 0) st = part_status(sP);
    s_status = st;
    s_pos = row_pos(A, R);
  }
  __syncthreads();
  if (s_status != 0) {
    if (tid == 0) put_result(A, R, r, -1, s_status, 0.0f, 0, 0, 0, s_pos, 0);
    float *probs = (float *)A.probs;
    if (probs) for (i32 i = tid; i < V; i += blockDim.x) probs[(u64)r * A.probs_stride + i] = 0.0f;
    return;
  }

  const float *src = row_src(A, R, r);
  const float M = sP.m;
  const int greedy = (R.flags & F_GREEDY) != 0;
  const int lp_on = out != 0 && R.logprobs >= 0;
  const int lp_proc = lp_on && (R.flags & F_LP_PROC) != 0;
  float S = greedy ? 1.0f : R.inv_temp;   /* greedy rows: logprobs at T = 1 */
  u32 theta = MS_KEY_NEG_INF + 1u;        /* kept set: kept_at(fkey(l), i, theta, cut) */
  i32 cut = 0x7fffffff;
  i32 token = sP.am;

  /* top_k rows whose k largest lie among few keys (ms_k_pass gathered
     them) finish on those candidates: the kept set, Z, the count and the
     token at once; the others take the thresholds ms_k_pass selected */
  int cand = 0;
  double Z = 1.0;
  i32 nkept = 1;
  float lp_tok = 0.0f;
  i32 rank = 0, n_top = 0;
  if (R.flags & F_LLAMA) {
    /* llama.cpp (greedy rows never get here): ms_k_list ran its chain */
    token = Q->ll_token;
    lp_tok = Q->ll_lp; rank = Q->ll_rank; n_top = Q->ll_ntop;
  } else {
    if (!greedy) {
      if (Q->cand) {
        const u32 n = min(Q->ncand, (u32)MS_CAND);
        for (u32 j = tid; j < n; j += blockDim.x) { s_buf.c.key[j] = Q->ck[j]; s_buf.c.id[j] = Q->cid[j]; }
        if (tid == 0) s_ncand = n;
        cand = 1;
        __syncthreads();
        theta = resolve_cands(src, (i32)min(s_ncand, (u32)MS_CAND), s_buf.c.key, s_buf.c.id, s_buf.c.w, R, sel_lower(R, Q),
                              Q->t_minp, M, S, ms_uniform_dev(R.seed, s_pos, 0u), &s_start, &s_ncand_i, &s_token);
        Z = s_start; nkept = s_ncand_i;
        if (!A.probs) token = s_token;
      } else { theta = sel_theta(R, Q); cut = Q->cut; }
    }

    /* the kept weight's tile sums (ms_k_sums): the mass Z, the
       draw, the processed logprobs */
    if ((!greedy || lp_proc) && !cand) {
      const i32 E = tile_e(V);
      const i32 TILE = 32 * E;
      const i32 nt = (V + TILE - 1) / TILE;
      for (i32 t = tid; t < nt; t += blockDim.x) s_buf.t[t] = Q->tsum[t];
      __syncthreads();
      /* the draw: the first kept id whose running weight exceeds u * Z */
      const int draw = !greedy && !A.probs;
      i32 drawn;
      Z = tiles_draw(s_buf.t, nt, draw, ms_uniform_dev(R.seed, s_pos, 0u), src, V, E, theta, cut, M, S, &s_draw, &drawn);
      if (draw) token = drawn;
    }

    /* final distributions (tests): w / Z on the kept set, 1 at the argmax for greedy rows */
    if (A.probs) {
      float *probs = (float *)A.probs + (u64)r * A.probs_stride;
      const double inv = 1.0 / Z;
      for (i32 i = tid; i < V; i += blockDim.x) {
        float pr;
        if (greedy) pr = i == token ? 1.0f : 0.0f;
        else { float l = src[i]; pr = kept_at(fkey(l), i, theta, cut) ? (float)((double)wgt(l, M, S) * inv) : 0.0f; }
        probs[i] = pr;
      }
    }
  }

  /* a scored row reports its given token (the host checked it is in the
     vocabulary; a llama.cpp row's is ms_k_list's already) */
  if (R.given >= 0 && token >= 0 && !A.probs) token = R.given;

  /* rows with logprobs end in ms_k_lp (a kernel of its own: here they
     made this the largest program to compile, 1.03 s against 0.69 s
     without, one core): what it needs, into the row's Sel */
  if (lp_on && token >= 0 && !((R.flags & F_LLAMA) && lp_proc)) {
    if (tid == 0) {
      Sel *W = (Sel *)A.sel + r;
      W->lp_z = Z; W->lp_theta = theta; W->lp_cut = cut;
      W->lp_token = token; W->lp_nkept = nkept; W->lp_cand = cand;
      W->lp_go = 1;
    }
    return;
  }
  if (tid == 0) put_result(A, R, r, token, token >= 0 ? 0 : ST_ALL_MASKED, lp_tok, rank, n_top, greedy, s_pos, !A.probs);
}
#endif

#if MS_IN_UNIT(7)
/* The logprobs of the rows ms_k_row left to it (Sel.lp_go), one block a
   row: the token's, its rank, and the top N, then the row's result.
   Raw: log_softmax of the caller's row; processed: log of the final
   distribution (greedy rows: log_softmax of the processed row), kept
   tokens only. */
extern "C" __global__ void __launch_bounds__(MS_NT, MS_ROW_MINB) ms_k_lp(Args A) {
  ms_pdl_start();
  __shared__ Row sR;
  __shared__ Part sP;
  __shared__ i32 s_go;
  __shared__ u64 s_pos;
  __shared__ struct { struct { u32 key[MS_CAND]; i32 id[MS_CAND]; } c; } s_buf;
  __shared__ u32 s_ncand;

  const i32 r = blockIdx.x;
  const i32 V = A.vocab;
  const i32 tid = threadIdx.x;
  Sel *Q = (Sel *)A.sel + r;
  row_to_shared(&sR, A, r);
  if (tid == 0) s_go = 0;
  __syncthreads();
  const Row &R = sR;
  Out *out = A.out ? (Out *)A.out + r : (Out *)0;
  if (R.status != 0 || (R.flags & F_END) || !out) return;
  if (tid == 0 && Q->lp_go) {
    s_go = 1;
    sP = Q->P;
    s_pos = row_pos(A, R);   /* (as ms_k_row's: the slot's length is only advanced below) */
  }
  __syncthreads();
  if (!s_go) return;

  const float *src = row_src(A, R, r);
  const float *rawp = (const float *)A.logits + (u64)r * A.stride;
  const float M = sP.m;
  const int greedy = (R.flags & F_GREEDY) != 0;
  const int lp_proc = (R.flags & F_LP_PROC) != 0;
  const float S = greedy ? 1.0f : R.inv_temp;   /* greedy rows: logprobs at T = 1 */
  const u32 theta = Q->lp_theta;
  const i32 cut = Q->lp_cut, token = Q->lp_token, cand = Q->lp_cand;
  const double Z = Q->lp_z;
  i32 nkept = Q->lp_nkept;
  i32 n_top = (R.flags & F_LLAMA) ? Q->ll_ntop : 0;   /* (a llama.cpp row's, as ms_k_list left it, unless a top list is written here) */
  LpVal lv;
  lv.p = lp_proc ? src : rawp;
  lv.theta = theta;
  lv.cut = cut;
  lv.raw = !lp_proc;
  const double log_sr = log((double)sP.sr);
  const double logZ = log(Z);
  const float vt = lv(token);
  const u32 kt = fkey(vt);
  /* the rank, and how many the kept set holds (processed: lv is -inf
     outside it, and a kept logit is finite) */
  u32 cnt = 0u, nk = 0u;
  for (i32 i = tid; i < V; i += blockDim.x) {
    const float v = lv(i);
    cnt += fkey(v) >= kt ? 1u : 0u;
    nk += v > ms_neg_inf() ? 1u : 0u;
  }
  /* logprobs >= the token's, itself and its ties included (vLLM v1's
     (x >= v).sum()) */
  i32 rank = (i32)bsum_u(cnt);
  if (lp_proc && !cand) nkept = (i32)bsum_u(nk);
  if (!(vt > ms_neg_inf())) {
    /* a token forced on a non-finite logit, or a scored one the row masks
       or drops: every logprob is >= -inf (the vocabulary), but in a raw
       row holding NaN or +Inf, where the CPU counts 1 + the finite ones
       (a rare path, out of the loop above) */
    u32 fin = 0u, bad = 0u;
    for (i32 i = tid; i < V; i += blockDim.x) {
      const float v = lv(i), w = lv.p[i];
      fin += (v > ms_neg_inf() && v < ms_pos_inf()) ? 1u : 0u;
      bad += lv.raw && !(w < ms_pos_inf()) ? 1u : 0u;   /* (NaN or +Inf, which lv reads as -inf) */
    }
    fin = bsum_u(fin);
    bad = bsum_u(bad);
    rank = bad == 0u ? V : 1 + (i32)fin;
  }
#define MS_LP(v) (lv.raw ? (float)((double)__fsub_rn((v), sP.mr) - log_sr) \
                : ((v) > ms_neg_inf() ? (float)((double)__fmul_rn(__fsub_rn((v), M), S) - logZ) : ms_neg_inf()))
  const float lp_tok = MS_LP(vt);
  i32 N = min(min(R.logprobs, A.top_stride), lp_proc ? nkept : V);
  if (N > MS_CAND) N = MS_CAND;
  if (N > 0 && A.top) {
    u32 na, ne;
    u32 tau = select_count(lv, V, 0u, (u32)N, &na, &ne);
    if (tid == 0) s_ncand = 0u;
    __syncthreads();
    const u32 need_eq = (u32)N - na;   /* places left for keys equal to tau */
    const int all_eq = ne <= need_eq;  /* (N >= V: tau = 0, every key is larger) */
    /* -inf (a raw row's own, or a masked processed one) is never listed,
       as on the CPU: the list may be shorter than N */
    for (i32 i = tid; i < V; i += blockDim.x) {
      u32 key = fkey(lv(i));
      if ((key > tau || (key == tau && all_eq)) && key != MS_KEY_NEG_INF) {
        u32 pos = atomicAdd(&s_ncand, 1u);
        if (pos < MS_CAND) { s_buf.c.key[pos] = key; s_buf.c.id[pos] = i; }
      }
    }
    __syncthreads();
    if (!all_eq && tau != MS_KEY_NEG_INF) {
      /* more ties at tau than places left: the lowest ids, in id order */
      u32 taken = 0u;
      const u32 base = s_ncand;
      for (i32 start = 0; start < V && taken < need_eq; start += blockDim.x) {
        i32 i = start + tid;
        u32 f = (i < V && fkey(lv(i)) == tau) ? 1u : 0u;
        u32 tot;
        u32 pos = bscan_excl(f, &tot);
        if (f && taken + pos < need_eq) { s_buf.c.key[base + taken + pos] = tau; s_buf.c.id[base + taken + pos] = i; }
        taken += tot;
      }
      __syncthreads();
      if (tid == 0) s_ncand = base + need_eq;
      __syncthreads();
    }
    const i32 n = min((i32)s_ncand, N);
    TopEntry *top = (TopEntry *)A.top + (u64)r * (u64)A.top_stride;
    if (tid < n) {
      /* place by (value descending, id ascending) */
      u32 k = s_buf.c.key[tid];
      i32 id = s_buf.c.id[tid];
      i32 pos = 0;
      for (i32 j = 0; j < n; j++) {
        u32 kj = s_buf.c.key[j];
        if (kj > k || (kj == k && s_buf.c.id[j] < id)) pos++;
      }
      float v = lv(id);
      top[pos].token = id;
      top[pos].logprob = MS_LP(v);
    }
    n_top = n;
    __syncthreads();
  }
#undef MS_LP

  __syncthreads();   /* every thread has read the row's Sel */
  if (tid == 0) {
    Q->lp_go = 0;
    put_result(A, R, r, token, 0, lp_tok, rank, n_top, greedy, s_pos, !A.probs);
  }
}
#endif

/* ---- a small top_k's rows after the statistics ----------------------------- */

#if MS_IN_UNIT(6)
/* Rows with F_KFAST, one block a row, right after ms_k_stats: no pass
   reads them. The statistics' lists mostly hold the k largest (cand 3),
   and an F_END row ends here on them (end_cands). Where the lists fell
   short, this block does what the passes would have: the keys above the
   lists' bound gathered from the row (cand 2), or, with too many of them
   or no bound, top_k's threshold by the count radix over the row and its
   candidates (P_COUNT, P_CAND), or, with more than MS_CAND of them (a
   crowd of ties at the threshold), top_p's threshold by the masses and
   the draw's tile sums (the radix passes, P_SUMS). One block reads such a
   row up to seven times, but the lists fall short rarely, and a batch of
   such rows then needs no pass launch at all. Rows with logprobs and
   probs calls end in ms_k_row, as after the passes. In the small
   program (NVRTC's fast compile: in ms_k_sums's, at full optimisation,
   it made that program the largest, 2.3 s against 1.3). (256, 4): at
   most 64 registers, four blocks an SM (a batch of 4 x SMs rows in one
   wave); the fast compile had given it 164 registers, one block an SM. */
extern "C" __global__ void __launch_bounds__(MS_ST, 4) ms_k_tail(Args A_) {
  ms_pdl_start();
  __shared__ union { double d[MS_BINS]; u32 u[4 * MS_CAND]; } sh;   /* select_mass, end_cands, end_draw */
  static_assert(MS_BINS * 8 >= MS_CAND * 16, "ms_k_tail's scratch: end_cands's keys, ids and weights");
  static_assert(4 * MS_CAND >= MS_KTH_BINS, "ms_k_tail's scratch: kth_key's histogram");
  __shared__ Row sR;
  __shared__ CandSh s_c;
  __shared__ DrawSh s_draw;
  /* end_cands and end_draw are calls here (MS_BLOCK_FN) taking the
     arguments by reference: one copy in shared memory, as ms_k_stats's
     (a reference to the parameter had every thread copy it to local
     memory: a 248-byte stack) */
  __shared__ Args sA;
  __shared__ i32 s_nb[32];
  __shared__ u32 s_n;
  const i32 r = blockIdx.x, tid = threadIdx.x;
  if (tid == 0) sA = A_;
  row_to_shared(&sR, A_, r);
  __syncthreads();
  const Args &A = sA;
  const i32 V = A.vocab;
  Sel *Q = (Sel *)A.sel + r;
  const Row &R = sR;
  if (R.status != 0 || !(R.flags & F_KFAST) || R.top_k > MS_KFAST_MAX || Q->status != 0) return;
  /* top_k's candidates without a counting pass, mostly without any pass:
     the row's k largest are among the lists of ms_k_stats's blocks unless
     one thread held five of them (or a block more than its slot); then
     hist, their scratch, back to zero for the passes */
  const Part *pp = (const Part *)A.parts + (u64)r * (u64)A.n_parts;
  if (tid < A.n_parts) s_nb[tid] = pp[tid].pad;
  __syncthreads();
  kfast_row(Q, R, A.n_parts, s_nb, sh.u, &s_n);
  __syncthreads();   /* every thread is done with the lists (and thread 0's Q->cand is visible) */
  for (i32 b = tid; b < MS_BINS; b += blockDim.x) Q->hist[b] = 0ull;
  if (R.flags & F_GREEDY) return;
  const i32 cand = Q->cand;
  const int end = (R.flags & F_END) != 0;
  if (cand == 3 && !end) return;   /* ms_k_row resolves it */
  const float *src = row_src(A, R, r);
  const float M = Q->P.m, S = R.inv_temp;
  u32 *const ck = sh.u;
  i32 *const cid = (i32 *)sh.u + MS_CAND;
  double *const cw = (double *)(sh.u + 2 * MS_CAND);
  if (cand == 3) { end_cands(A, R, r, Q, src, M, S, ck, cid, cw, &s_c); return; }
  if (cand == 2) {
    /* the keys >= the lists' bound hold the k largest */
    gather_cands(src, 0, V, Q->cedge, &Q->ncand, Q->ck, Q->cid);
    __threadfence();
    __syncthreads();
    if (*(volatile u32 *)&Q->ncand <= (u32)MS_CAND) {
      if (end) end_cands(A, R, r, Q, src, M, S, ck, cid, cw, &s_c);
      return;
    }
    __syncthreads();
    if (tid == 0) { Q->cand = 0; Q->cdone = 0; Q->ncand = 0u; }
    __syncthreads();
  }
  /* top_k's threshold, its candidates when they are few */
  LpVal lv;
  lv.p = src; lv.theta = MS_KEY_NEG_INF + 1u; lv.cut = 0x7fffffff; lv.raw = 0;
  u32 na, ne;
  const u32 tk = select_count(lv, V, sel_lower(R, Q), (u32)R.top_k, &na, &ne);
  if (na + ne <= (u32)MS_CAND) {
    gather_cands(src, 0, V, tk, &Q->ncand, Q->ck, Q->cid);
    __threadfence();
    __syncthreads();
    if (tid == 0) { Q->cand = 1; Q->cedge = tk; Q->cdone = 1; }
    __syncthreads();
    if (end) end_cands(A, R, r, Q, src, M, S, ck, cid, cw, &s_c);
    return;
  }
  /* a crowd of ties at it: the radix passes' thresholds and the tile sums */
  const u32 tp = R.top_p < 1.0f ? select_mass(src, V, tk, R.top_p, M, S, sh.d) : 0u;
  if (tid == 0) { Q->tk = tk; Q->cdone = 1; Q->tp = tp; Q->pdone = 1; }
  __syncthreads();
  const u32 theta = sel_theta(R, Q);
  row_tile_sums(src, V, theta, M, S, Q->tsum);
  __threadfence();
  __syncthreads();
  if (tid == 0) Q->sums_done = 1;
  if (end) end_draw(A, R, r, Q, src, V, theta, Q->cut, M, S, sh.d, &s_draw);
}
#endif

/* ---- device-side sequences -------------------------------------------------- */

struct SeqArgs {
  u64 seq_state, seq_len, seq_stride, ids, slots;
  i32 slot, n, vocab, n_slots;
  u64 hist;               /* 0, or per slot 1 + hist_cap words (slot_hist) */
  i32 hist_cap, hist_pad;
  u64 budget;             /* per slot MS_BUD_WORDS words (slot_budget) */
  i32 bud_tokens, bud_n_start, bud_n_end, bud_pad;   /* ms_k_seq_prompt: the slot's budget (-1: none) */
  i32 bud_ids[2 * MS_BUD_MAX];                        /* ... its start ids, then its end ids */
};

#if MS_IN_UNIT(3)
/* Marks the prompt tokens of a freshly cleared slot (bit 31 of the
   counter), keeps the prompt's last hist_cap tokens in its history and
   sets its output length to 0. */
extern "C" __global__ void __launch_bounds__(MS_ST) ms_k_seq_prompt(SeqArgs S) {
  ms_pdl_start();
  u32 *st = (u32 *)S.seq_state + (u64)S.slot * S.seq_stride;
  const i32 *ids = (const i32 *)S.ids;
  i32 *h = S.hist ? slot_hist(S.hist, S.hist_cap, S.slot) : (i32 *)0;
  for (i32 j = blockIdx.x * blockDim.x + threadIdx.x; j < S.n; j += gridDim.x * blockDim.x) {
    i32 t = ids[j];
    if (t >= 0 && t < S.vocab) {
      atomicOr(&st[t], 0x80000000u);
      atomicOr(&slot_seen(S.seq_state, S.n_slots, S.seq_stride, S.slot)[t >> 5], 1u << (t & 31));
    }
    if (h && j >= S.n - S.hist_cap) *hist_at(h, S.hist_cap, (u64)j) = t;
  }
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    ((i32 *)S.seq_len)[S.slot] = 0;
    if (h) h[0] = S.n;
    /* the budget, then its state machine over the prompt (one thread: the
       states follow one another) */
    i32 *b = slot_budget(S.budget, S.slot);
    b[0] = S.bud_tokens; b[1] = S.bud_n_start; b[2] = S.bud_n_end;
    b[3] = B_IDLE; b[4] = 0; b[5] = 0; b[6] = 0; b[7] = 0;
    for (i32 j = 0; j < 2 * MS_BUD_MAX; j++) b[8 + j] = S.bud_ids[j];
    if (S.bud_tokens >= 0) for (i32 j = 0; j < S.n; j++) budget_step(b, ids[j]);
  }
}
#endif

#if MS_IN_UNIT(3)
/* Appends tokens[j] to slot slots[j] for j < n, in j order (ids outside
   the vocab and negative slots are skipped). One block: the histories
   keep the order, so a slot's tokens in a chunk of MS_ST entries take the
   places after its length in the order of j (only its last hist_cap reach
   the ring), and the last of them writes the new length after every
   thread has read the old one. */
extern "C" __global__ void __launch_bounds__(MS_ST) ms_k_seq_accept(SeqArgs S) {
  ms_pdl_start();
  __shared__ i32 s_slot[MS_ST], s_tok[MS_ST];
  const i32 *ids = (const i32 *)S.ids;
  const i32 *slots = (const i32 *)S.slots;
  const i32 tid = threadIdx.x;
  if (blockIdx.x != 0) return;
  for (i32 base = 0; base < S.n; base += MS_ST) {
    const i32 j = base + tid;
    const i32 t = j < S.n ? ids[j] : -1, s = j < S.n ? slots[j] : -1;
    const int valid = s >= 0 && s < S.n_slots && t >= 0 && t < S.vocab;
    s_slot[tid] = valid ? s : -1;
    s_tok[tid] = t;
    __syncthreads();
    i32 before = 0, after = 0, len = 0;
    if (valid) {
      for (i32 q = 0; q < tid; q++) before += s_slot[q] == s;
      for (i32 q = tid + 1; q < MS_ST; q++) after += s_slot[q] == s;
      len = ((const i32 *)S.seq_len)[s];
    }
    __syncthreads();   /* every old length read before any is written */
    if (valid) {
      atomicAdd((u32 *)S.seq_state + (u64)s * S.seq_stride + (u64)t, 1u);
      atomicOr(&slot_seen(S.seq_state, S.n_slots, S.seq_stride, s)[t >> 5], 1u << (t & 31));
      if (S.hist && after < S.hist_cap) {   /* earlier ones would share a place with a later one */
        i32 *h = slot_hist(S.hist, S.hist_cap, s);
        *hist_at(h, S.hist_cap, (u64)(u32)h[0] + (u64)(u32)(len + before)) = t;
      }
      if (!after) ((i32 *)S.seq_len)[s] = len + before + 1;
    }
    if (tid == 0)   /* the budgets, token by token in j order */
      for (i32 q = 0; q < MS_ST && base + q < S.n; q++)
        if (s_slot[q] >= 0) budget_step(slot_budget(S.budget, s_slot[q]), s_tok[q]);
    __syncthreads();
  }
}
#endif
