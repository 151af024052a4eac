/* ---- implementation: counter-based random numbers ------------------------- */
/* Philox4x32-10: 10 rounds of a multiply/xor bijection keyed by a 64-bit
   key. Chosen because a draw is then a pure function of its coordinates,
   the same on CPU and GPU (the CUDA kernels use the same formula). */
#define MS__PHILOX_M0 0xD2511F53u
#define MS__PHILOX_M1 0xCD9E8D57u
#define MS__PHILOX_W0 0x9E3779B9u
#define MS__PHILOX_W1 0xBB67AE85u

MSDEF void ms_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  int round;
  for (round = 0; round < 10; round++) {
    uint64_t p0 = (uint64_t)MS__PHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)MS__PHILOX_M1 * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += MS__PHILOX_W0;
    k1 += MS__PHILOX_W1;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* u = (a * 2^26 + b) / 2^53 with a = w0 >> 5 (27 bits), b = w1 >> 6 (26 bits):
   every double in [0, 1) on the 2^-53 grid, never 1. */
MSDEF double ms_uniform(uint64_t seed, uint64_t position, uint32_t purpose) {
  uint32_t ctr[4], key[2], w[4];
  ctr[0] = (uint32_t)position; ctr[1] = (uint32_t)(position >> 32);
  ctr[2] = purpose; ctr[3] = 0;
  key[0] = (uint32_t)seed; key[1] = (uint32_t)(seed >> 32);
  ms_philox4x32(ctr, key, w);
  return ((double)(w[0] >> 5) * 67108864.0 + (double)(w[1] >> 6)) * (1.0 / 9007199254740992.0);
}

/* ms_fresh_seed with `extra` (a sequence's address) in the counter beside
   the stack address, the salt alone the key: two sequences reset in the
   same clock tick get different seeds for the same salt (different
   counters, one key: Philox is a bijection of the counter) and for
   different salts (different keys). XOR-ing the address into the salt, as
   ms_seq_reset did, made salt 0x10000 on one sequence and salt 0 on one
   0x10000 bytes further the same key: the same seed. */
MS__PRIVATE uint64_t ms__fresh_seed_at(uint64_t salt, uint64_t extra) {
  /* Entropy from the wall clock, the CPU clock and a stack address (ASLR),
     whitened by Philox with the caller's salt as the key. */
  uint32_t ctr[4], key[2], w[4];
  volatile int local = 0;
  uint64_t t = (uint64_t)time(NULL);
  uint64_t c = (uint64_t)clock();
  uint64_t a = (uint64_t)(uintptr_t)&local ^ extra;
  ctr[0] = (uint32_t)t; ctr[1] = (uint32_t)(t >> 32) ^ (uint32_t)c;
  ctr[2] = (uint32_t)a; ctr[3] = (uint32_t)(a >> 32) ^ (uint32_t)(c >> 32);
  key[0] = (uint32_t)salt; key[1] = (uint32_t)(salt >> 32);
  ms_philox4x32(ctr, key, w);
  (void)local;
  return ((uint64_t)w[0] << 32) | w[1];
}

MSDEF uint64_t ms_fresh_seed(uint64_t salt) { return ms__fresh_seed_at(salt, 0); }
