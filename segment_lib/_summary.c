/*
 * segment_lib._summary: a compiled one-pass summary of consecutive magic-2 record batches.
 *
 *   summarize_v2     walk the batches of a buffer like segment_lib._speedups.scan_batches_v2
 *                    (the same acceptance rules, the same stop reasons), but instead of one
 *                    BatchHeader per batch return running aggregates: offsets, timestamps,
 *                    counts, codecs, leader-epoch runs, byte-bounded intervals with their
 *                    largest timestamps, a time-bucket histogram; and, in the same pass over
 *                    the bytes, the CRC-32C of everything it walked (see "one CRC pass");
 *   crc32c           the CRC-32C used here (for tests and benchmarks);
 *   crc32c_combine   crc(A || B) from crc(A), crc(B) and len(B) (for tests of the combine).
 *
 * Why a module of its own: what it computes is a summary of batch *headers* (Kafka format
 * facts, no catalog types: plain tuples and ints go in and out); the catalog's extractor
 * (kafka_archive.catalog.extract) books them.  The specification is the Python booking of the
 * extractor (SegmentExtractor._on_batch / _book over iter_batches' headers); tests compare the
 * two on random segments (tests/test_summary_speedups.py, tests/test_catalog_extract.py).
 *
 * Why C: at the usual 16 KiB batch, building one 18-field BatchHeader tuple per batch and
 * booking it in Python costs about as much as reading the batch from the page cache; here a
 * batch costs a few dozen instructions besides its CRC.
 *
 * ---- the aggregates ----------------------------------------------------------------------
 *
 * `state` is a tuple of 18 ints carried from call to call (the caller starts it with
 * INITIAL_STATE and may book batches itself between calls, with the same rules):
 *
 *   0 first_offset, 1 first_timestamp  base offset / first timestamp of the first batch with a
 *                                       base offset >= 0 (while first_offset < 0, every batch
 *                                       overwrites both: as the per-batch booking does)
 *   2 last_offset                        of the last batch (-1: none yet)
 *   3 batches, 4 records                 counts (records: the header's recordCount)
 *   5 transactional, 6 control           batch counts
 *   7 codec_mask                         bit c set when a batch of codec id c was seen
 *   8 max_timestamp, 9 offset_of_max     the largest batch max timestamp (-1 start) and the
 *                                       last offset of the first batch that had it
 *   10 epoch, 11 epoch_first             the open leader-epoch run (epoch NO_EPOCH: none)
 *   12 iv_open, 13 iv_start_offset, 14 iv_byte_start, 15 iv_max_ts, 16 iv_record_max_ts,
 *   17 iv_records                        the open interval
 *
 * Per batch (pos = base + its position in buf, size = its bytes, last = base_offset +
 * lastOffsetDelta):
 *   - epoch runs: when its partition leader epoch differs from the open run's, the open run
 *     (epoch, epoch_first, last offset of the previous batch) is closed and returned, and a run
 *     (epoch, base_offset) opens;
 *   - intervals: the batch joins the open interval if the interval then spans at most
 *     interval_bytes (pos + size - iv_byte_start <= interval_bytes); otherwise the open
 *     interval is closed at the previous batch (start_offset, previous last offset, byte start,
 *     pos, max_ts, record_max_ts, records) and returned, and the batch opens one (even alone
 *     bigger than interval_bytes).  max_ts is the largest batch max timestamp, record_max_ts
 *     the largest max timestamp of batches holding records (-1 for one that holds none);
 *   - histogram: a batch with max timestamp m >= 0 adds (records, size) to bucket
 *     m - m % histogram_ms, records counting 0 for a control batch.  Returned as
 *     (bucket, records, bytes) triples to be summed by bucket (a bucket may come more than once).
 *
 * ---- acceptance: exactly scan_batches_v2's -------------------------------------------------
 *
 * A batch is accepted under the conditions under which segment_lib.log_file.iter_batches
 * yields it (see _speedups.c, "the batch scan"); the walk stops at the first one that is not,
 * with the same reasons: "end", "short", "magic", "invalid", "torn", "crc", and one more:
 * "wide" (base offset + lastOffsetDelta overflows int64: the Python reader takes such a batch,
 * with Python ints).  Nothing is raised for bad bytes: the caller hands the stop position to
 * iter_batches, which raises there exactly what it always raised, or reads the legacy message.
 *
 * ---- one CRC pass ---------------------------------------------------------------------------
 *
 * When `crc` is an int (a CRC-32C value of the bytes before `start`, as crc32c.crc32c's
 * `value`), the result carries the CRC-32C continued over [start, stop).  When verify_crc is
 * false, the register simply runs over every batch.  When it is true, every byte is still read
 * only once: a magic-2 batch's CRC covers its bytes from the attributes on (B, L bytes), not
 * the 21 bytes in front (H); with r the object's register after H,
 *     raw(r, B) = raw(~0, B) ^ Z_L(r ^ ~0)
 * (raw = the register update without conditioning, affine in the register; Z_L = the linear
 * map "append L zero bytes"), and raw(~0, B) is exactly what the batch CRC check computes.
 * Z_L(v) = v * x^(8L) mod P is one carry-less multiplication by a constant depending on L
 * (PCLMULQDQ), reduced by the crc32 instruction (see "CRC-32C" below); the constant is built
 * from a table of x^(2^k) powers and cached per distinct L within a call.  Without PCLMULQDQ
 * the object register makes a second pass over each batch right after its check (the batch is
 * then in L1/L2).
 *
 * The GIL is released while walking more than 32 KiB; nothing Python is touched meanwhile (the
 * results are collected in C arrays and converted afterwards).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ==== CRC-32C =============================================================================
 *
 * Conventions (as in _speedups.c): the "register" r is what the SSE4.2 crc32 instruction and
 * the reflected byte table update (polynomial 0x82F63B78 bit-reflected); the CRC-32C of data d
 * continuing from a previous value c is ~raw(~c, d).
 *
 * Polynomial arithmetic mod P in the reflected representation: bit i of a 32-bit value is the
 * coefficient of x^(31-i) (bit 31 is the constant term).  gf_mul is the portable multiply.
 * With PCLMULQDQ, for a, b in this representation, clmul(a, b) holds a*b shifted so that the
 * crc32 instruction applied to it (crc32_u64(0, clmul(a, b))) gives a * b * x^33 mod P (the
 * instruction multiplies its 64-bit operand by x^32 and reduces it, and the reflected
 * product is one bit off).  So with K(n) = x^(8n - 33) mod P, Z_n(r) = crc32_u64(0, clmul(r,
 * K(n))); and the same operation on two such constants gives K(a) (x) K(b) = K(a + b), so
 * K(n) is the product of the table entries K(2^k) of the bits of n.
 *
 * The raw update, chosen once at import (CRC32C_IMPL):
 *   - "avx512-vpclmulqdq" (CPUs with AVX-512 and VPCLMULQDQ): carry-less folding, 256 bytes
 *     per round (see "folding" below), as fast as a plain read of mapped page-cache memory;
 *   - "sse4.2x3+pclmul" / "sse4.2x3": three interleaved crc32 streams of 256 bytes each, as
 *     _speedups.c's "sse4.2x3" does (see its header for the measurements behind the layout),
 *     combined with Z_256 (one multiplication with PCLMULQDQ, four table lookups without),
 *     after aligning the start to 8 bytes, prefetching 2 KiB ahead (on page-cached segments,
 *     AMD EPYC, 1 GiB mapped, the prefetch took the pass from 75 to 66 ms/GiB);
 *   - "table": slicing-by-8 (the extractor then does not use this module at all).
 */

#define CRC32C_POLY 0x82F63B78u
#define CRC_ONE 0x80000000u      /* the polynomial 1 */
#define CRC_BLOCK 256            /* bytes per stream and round of the 3-way interleave */
#define CRC_PREFETCH 2048        /* bytes ahead of the streams prefetched */

typedef uint32_t (*crc_raw_fn)(uint32_t r, const uint8_t *p, size_t n);

static uint32_t crc_table[8][256];      /* slicing-by-8: crc_table[k][b] = b advanced k+1 bytes */
static uint32_t crc_zeros[4][256];      /* Z_CRC_BLOCK, one table per register byte */
static uint32_t crc_k_pow2[64];         /* K(2^k) = x^(8 * 2^k - 33) mod P */
static uint32_t crc_k_block;            /* K(CRC_BLOCK) */
/* folding constants (see "folding" below): F(e) = x^(e - 1) mod P, for the distances used */
static uint32_t crc_f2112, crc_f2048, crc_f576, crc_f512, crc_f192, crc_f128;

/* a * b mod P (portable: 32 shift-and-add steps) */
static uint32_t
gf_mul(uint32_t a, uint32_t b)
{
    uint32_t prod = 0;
    for (int i = 31; i >= 0; i--) {
        if ((a >> i) & 1) {
            prod ^= b;
        }
        b = (b >> 1) ^ ((b & 1) ? CRC32C_POLY : 0); /* b * x */
    }
    return prod;
}

static uint32_t
crc_raw_table(uint32_t r, const uint8_t *p, size_t n)
{
    while (n >= 8) {
        uint32_t lo = r ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
                           | (uint32_t)p[3] << 24);
        r = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF]
            ^ crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24] ^ crc_table[3][p[4]]
            ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--) {
        r = crc_table[0][(r ^ *p++) & 0xFF] ^ (r >> 8);
    }
    return r;
}

static inline uint32_t
crc_zeros_apply(uint32_t r)
{
    return crc_zeros[0][r & 0xFF] ^ crc_zeros[1][(r >> 8) & 0xFF] ^ crc_zeros[2][(r >> 16) & 0xFF]
           ^ crc_zeros[3][r >> 24];
}

/* Z_n(r) portably: r * x^(8n) by square-and-multiply with gf_mul (tests and the rare CPU
 * without PCLMULQDQ; the scan does not use it) */
static uint32_t
crc_shift_portable(uint32_t r, uint64_t n)
{
    uint32_t x8 = 1u << 23; /* x^8 (bit 31 - 8) */
    while (n) {
        if (n & 1) {
            r = gf_mul(r, x8);
        }
        x8 = gf_mul(x8, x8);
        n >>= 1;
    }
    return r;
}

/* x^e mod P */
static uint32_t
gf_xpow(uint64_t e)
{
    uint32_t r = CRC_ONE, base = 1u << 30; /* 1, x */
    while (e) {
        if (e & 1) {
            r = gf_mul(r, base);
        }
        base = gf_mul(base, base);
        e >>= 1;
    }
    return r;
}

static void
crc_init_tables(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t r = b;
        for (int j = 0; j < 8; j++) {
            r = (r & 1) ? (r >> 1) ^ CRC32C_POLY : r >> 1;
        }
        crc_table[0][b] = r;
    }
    for (int k = 1; k < 8; k++) {
        for (int b = 0; b < 256; b++) {
            uint32_t r = crc_table[k - 1][b];
            crc_table[k][b] = crc_table[0][r & 0xFF] ^ (r >> 8);
        }
    }
    /* Z_CRC_BLOCK on each basis vector, then per register byte */
    uint32_t basis[32];
    for (int i = 0; i < 32; i++) {
        basis[i] = crc_shift_portable((uint32_t)1 << i, CRC_BLOCK);
    }
    for (int k = 0; k < 4; k++) {
        for (int b = 0; b < 256; b++) {
            uint32_t v = 0;
            for (int j = 0; j < 8; j++) {
                if (b & (1 << j)) {
                    v ^= basis[8 * k + j];
                }
            }
            crc_zeros[k][b] = v;
        }
    }
    /* x^-1: the value whose product with x is 1.  Multiplying v by x gives (v >> 1) ^ POLY
     * when bit 0 of v is set; POLY has bit 31 (the constant term) set, so
     * v = ((1 ^ POLY) << 1) | 1. */
    const uint32_t x_inv = ((CRC_ONE ^ CRC32C_POLY) << 1) | 1;
    uint32_t x_inv33 = CRC_ONE;
    for (int i = 0; i < 33; i++) {
        x_inv33 = gf_mul(x_inv33, x_inv);
    }
    uint32_t x8pow = 1u << 23; /* x^(8 * 2^k), k = 0 */
    for (int k = 0; k < 64; k++) {
        crc_k_pow2[k] = gf_mul(x8pow, x_inv33);
        x8pow = gf_mul(x8pow, x8pow);
    }
    crc_k_block = crc_k_pow2[8]; /* K(256) = K(2^8) */
    crc_f2112 = gf_xpow(2112 - 1);
    crc_f2048 = gf_xpow(2048 - 1);
    crc_f576 = gf_xpow(576 - 1);
    crc_f512 = gf_xpow(512 - 1);
    crc_f192 = gf_xpow(192 - 1);
    crc_f128 = gf_xpow(128 - 1);
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_X86_CRC 1
#include <immintrin.h>

#define TARGET_SSE42 __attribute__((target("sse4.2")))
#define TARGET_CLMUL __attribute__((target("sse4.2,pclmul")))

static inline uint64_t
load_le64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* x86 is little-endian, as the crc32 instruction wants */
    return v;
}

/* one stream, 8 bytes per instruction, after aligning (loads straddling cache lines are slow
 * on data streamed from memory) */
TARGET_SSE42 static inline uint32_t
crc_raw_sse42_1(uint32_t r, const uint8_t *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        r = _mm_crc32_u8(r, *p++);
        n--;
    }
    uint64_t r64 = r;
    while (n >= 8) {
        r64 = _mm_crc32_u64(r64, load_le64(p));
        p += 8;
        n -= 8;
    }
    r = (uint32_t)r64;
    while (n--) {
        r = _mm_crc32_u8(r, *p++);
    }
    return r;
}

/* Z_n(r) = crc32_u64(0, clmul(r, K(n))) */
TARGET_CLMUL static inline uint32_t
crc_mul_clmul(uint32_t a, uint32_t k)
{
    __m128i prod = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)k), 0);
    return (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(prod));
}

TARGET_CLMUL static uint32_t
crc_k_of(uint64_t n)
{
    uint32_t k = 0;
    int have = 0;
    for (int i = 0; n; i++, n >>= 1) {
        if (n & 1) {
            k = have ? crc_mul_clmul(k, crc_k_pow2[i]) : crc_k_pow2[i];
            have = 1;
        }
    }
    return have ? k : 0;
}

#define CRC_RAW_X3(NAME, TARGET, COMBINE)                                                      \
    TARGET static uint32_t NAME(uint32_t r, const uint8_t *p, size_t n)                        \
    {                                                                                          \
        while (n && ((uintptr_t)p & 7)) {                                                      \
            r = _mm_crc32_u8(r, *p++);                                                         \
            n--;                                                                               \
        }                                                                                      \
        while (n >= 3 * (size_t)CRC_BLOCK) {                                                   \
            uint64_t r0 = r, r1 = 0, r2 = 0;                                                   \
            const uint8_t *stop = p + CRC_BLOCK;                                               \
            for (int q = 0; q < 3 * CRC_BLOCK; q += 64) {                                      \
                _mm_prefetch((const char *)p + CRC_PREFETCH + q, _MM_HINT_T0);                 \
            }                                                                                  \
            do {                                                                               \
                r0 = _mm_crc32_u64(r0, load_le64(p));                                          \
                r1 = _mm_crc32_u64(r1, load_le64(p + CRC_BLOCK));                              \
                r2 = _mm_crc32_u64(r2, load_le64(p + 2 * CRC_BLOCK));                          \
                p += 8;                                                                        \
            } while (p < stop);                                                                \
            r = COMBINE(COMBINE((uint32_t)r0) ^ (uint32_t)r1) ^ (uint32_t)r2;                  \
            p += 2 * CRC_BLOCK;                                                                \
            n -= 3 * (size_t)CRC_BLOCK;                                                        \
        }                                                                                      \
        return crc_raw_sse42_1(r, p, n);                                                       \
    }

#define COMBINE_TABLE(v) crc_zeros_apply(v)
#define COMBINE_CLMUL(v) crc_mul_clmul((v), crc_k_block)
CRC_RAW_X3(crc_raw_x3_table, TARGET_SSE42, COMBINE_TABLE)
CRC_RAW_X3(crc_raw_x3_clmul, TARGET_CLMUL, COMBINE_CLMUL)

/* ---- folding with VPCLMULQDQ (AVX-512) ----
 *
 * Why: the crc32 instruction retires 8 bytes per cycle at best (three streams), ~22 GB/s here,
 * below what one core streams from the page cache (the build's CRC pass took 70 ms/GiB of
 * mapped segments with it, a pass that only reads every byte 51).  Carry-less multiplication
 * folds 64 bytes per instruction pair.
 *
 * The math (reflected representation; a 16-byte block read little-endian is the polynomial
 * V = Q0 * x^64 + Q1, Q0 its first 8 bytes, bit i of a 128-bit lane the coefficient of
 * x^(127 - i)): XORing the register into the first 4 bytes and then raw(0, V) = V * x^32 mod P
 * is the register after those 16 bytes; the message "V followed by B" is equivalent to
 * V * x^(8|B|) + B, and V * x^F = Q0 * x^(F+64) + Q1 * x^F, each a 64 x 32-bit carry-less
 * product with the constant x^(F+64) or x^F mod P (degree < 96: it fits the lane, and only the
 * value mod P matters).  The reflected product of two 64-bit lanes comes out multiplied by x
 * (bit k of the 128-bit result is the coefficient of x^(126 - k)), so the constants are
 * F(e) = x^(e - 1) mod P, placed in the upper 32 bits of their 64-bit lane.  Four 512-bit
 * accumulators hold 16 lanes (256 bytes) and fold by F = 2048 bits per round; at the end they
 * are folded into one another (by 512 bits), the four lanes of the last into one another (by
 * 128 bits), and the 16 bytes left are run through the crc32 instruction (V * x^32 mod P);
 * the tail after the last full round continues with it.  Checked against the crc32c package
 * (tests/test_summary_speedups.py), first as a Python model of exactly these steps.
 * Measured over 1 GiB of mapped, page-cached segments in 8 MiB calls: 50.5 ms/GiB, as fast as
 * numpy's or-reduce over the same views (51; the three crc32 streams: 69); 58 GB/s on an
 * 8 MiB buffer.  No software prefetch here: 1, 2, 4, 8 KiB ahead measured 54-57 ms/GiB (the
 * hardware prefetchers follow the one sequential stream). */
#if defined(__clang__) || __GNUC__ >= 8 /* compilers that know VPCLMULQDQ */
#define HAVE_FOLD 1
#define TARGET_FOLD __attribute__((target("sse4.2,pclmul,avx512f,avx512vl,vpclmulqdq")))
#define FOLD_MIN_BYTES 1024 /* below, the setup and the final reduction cost more than they save */

TARGET_FOLD static inline __m512i
fold_512(__m512i acc, __m512i k, __m512i next)
{
    __m512i lo = _mm512_clmulepi64_epi128(acc, k, 0x00); /* Q0 * x^(F+64) */
    __m512i hi = _mm512_clmulepi64_epi128(acc, k, 0x11); /* Q1 * x^F */
    return _mm512_ternarylogic_epi64(lo, hi, next, 0x96); /* three-way xor */
}

TARGET_FOLD static inline __m128i
fold_128(__m128i acc, __m128i k, __m128i next)
{
    __m128i lo = _mm_clmulepi64_si128(acc, k, 0x00);
    __m128i hi = _mm_clmulepi64_si128(acc, k, 0x11);
    return _mm_ternarylogic_epi64(lo, hi, next, 0x96);
}

TARGET_FOLD static uint32_t
crc_raw_fold(uint32_t r, const uint8_t *p, size_t n)
{
    /* align the streams to cache lines (a 64-byte load across two lines is two loads) */
    while (n && ((uintptr_t)p & 63)) {
        if (((uintptr_t)p & 7) == 0 && n >= 8) {
            r = (uint32_t)_mm_crc32_u64(r, load_le64(p));
            p += 8;
            n -= 8;
        }
        else {
            r = _mm_crc32_u8(r, *p++);
            n--;
        }
    }
    if (n < FOLD_MIN_BYTES) {
        return crc_raw_x3_clmul(r, p, n);
    }
    __m512i x0 = _mm512_xor_si512(_mm512_load_si512((const void *)p),
                                  _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)r)));
    __m512i x1 = _mm512_load_si512((const void *)(p + 64));
    __m512i x2 = _mm512_load_si512((const void *)(p + 128));
    __m512i x3 = _mm512_load_si512((const void *)(p + 192));
    p += 256;
    n -= 256;
    const __m512i k2048 = _mm512_broadcast_i32x4(
        _mm_set_epi64x((long long)((uint64_t)crc_f2048 << 32), (long long)((uint64_t)crc_f2112 << 32)));
    while (n >= 256) {
        x0 = fold_512(x0, k2048, _mm512_load_si512((const void *)p));
        x1 = fold_512(x1, k2048, _mm512_load_si512((const void *)(p + 64)));
        x2 = fold_512(x2, k2048, _mm512_load_si512((const void *)(p + 128)));
        x3 = fold_512(x3, k2048, _mm512_load_si512((const void *)(p + 192)));
        p += 256;
        n -= 256;
    }
    const __m512i k512 = _mm512_broadcast_i32x4(
        _mm_set_epi64x((long long)((uint64_t)crc_f512 << 32), (long long)((uint64_t)crc_f576 << 32)));
    x1 = fold_512(x0, k512, x1);
    x2 = fold_512(x1, k512, x2);
    x3 = fold_512(x2, k512, x3);
    const __m128i k128 =
        _mm_set_epi64x((long long)((uint64_t)crc_f128 << 32), (long long)((uint64_t)crc_f192 << 32));
    __m128i v = _mm512_extracti32x4_epi32(x3, 0);
    v = fold_128(v, k128, _mm512_extracti32x4_epi32(x3, 1));
    v = fold_128(v, k128, _mm512_extracti32x4_epi32(x3, 2));
    v = fold_128(v, k128, _mm512_extracti32x4_epi32(x3, 3));
    uint64_t reg = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(v));
    reg = _mm_crc32_u64(reg, (uint64_t)_mm_extract_epi64(v, 1));
    return crc_raw_x3_clmul((uint32_t)reg, p, n);
}
#endif /* HAVE_FOLD */
#endif /* x86-64 */

static crc_raw_fn crc_raw_auto = crc_raw_table;
static crc_raw_fn crc_raw_x3 = NULL;   /* the crc32-instruction kernel, when the CPU has it */
static crc_raw_fn crc_raw_folding = NULL; /* the VPCLMULQDQ kernel, when the CPU has it */
static int crc_have_clmul = 0;
static const char *crc_impl_name = "table";

static void
crc_init(void)
{
    crc_init_tables();
#ifdef HAVE_X86_CRC
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        if (__builtin_cpu_supports("pclmul")) {
            crc_raw_auto = crc_raw_x3 = crc_raw_x3_clmul;
            crc_have_clmul = 1;
            crc_impl_name = "sse4.2x3+pclmul";
#ifdef HAVE_FOLD
            if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl")
                && __builtin_cpu_supports("vpclmulqdq")) {
                crc_raw_auto = crc_raw_folding = crc_raw_fold;
                crc_impl_name = "avx512-vpclmulqdq";
            }
#endif
        }
        else {
            crc_raw_auto = crc_raw_x3 = crc_raw_x3_table;
            crc_impl_name = "sse4.2x3";
        }
    }
#endif
}

/* Z_n(r) with the fastest method available; `cache` remembers the last (n, K(n)) */
typedef struct {
    uint64_t n;
    uint32_t k;
} k_cache_t;

static inline uint32_t
crc_shift(uint32_t r, uint64_t n, k_cache_t *cache)
{
    if (n == 0) {
        return r;
    }
#ifdef HAVE_X86_CRC
    if (crc_have_clmul) {
        if (cache->n != n) {
            cache->n = n;
            cache->k = crc_k_of(n);
        }
        return crc_mul_clmul(r, cache->k);
    }
#endif
    (void)cache;
    return crc_shift_portable(r, n);
}

/* ==== the walk ============================================================================ */

/* The magic-2 header layout (big-endian); checked against segment_lib.record_batch at first
 * use, as _speedups.c does. */
#define OFF_BASE_OFFSET 0
#define OFF_BATCH_LENGTH (OFF_BASE_OFFSET + 8)
#define OFF_LEADER_EPOCH (OFF_BATCH_LENGTH + 4)
#define OFF_MAGIC (OFF_LEADER_EPOCH + 4)
#define OFF_CRC (OFF_MAGIC + 1)
#define OFF_ATTRIBUTES (OFF_CRC + 4)
#define OFF_LAST_OFFSET_DELTA (OFF_ATTRIBUTES + 2)
#define OFF_FIRST_TIMESTAMP (OFF_LAST_OFFSET_DELTA + 4)
#define OFF_MAX_TIMESTAMP (OFF_FIRST_TIMESTAMP + 8)
#define OFF_PRODUCER_ID (OFF_MAX_TIMESTAMP + 8)
#define OFF_PRODUCER_EPOCH (OFF_PRODUCER_ID + 8)
#define OFF_BASE_SEQUENCE (OFF_PRODUCER_EPOCH + 2)
#define OFF_RECORD_COUNT (OFF_BASE_SEQUENCE + 4)
#define V2_RECORDS_START (OFF_RECORD_COUNT + 4)
#define V2_CRC_START OFF_ATTRIBUTES
#define V2_LOG_OVERHEAD OFF_LEADER_EPOCH
#define V2_MIN_BATCH_LENGTH (V2_RECORDS_START - V2_LOG_OVERHEAD)
#define V2_MAGIC_OFFSET OFF_MAGIC
#define ATTR_CODEC_MASK 0x07
#define ATTR_TRANSACTIONAL 0x10
#define ATTR_CONTROL 0x20
#define N_CODECS 5 /* NONE, GZIP, SNAPPY, LZ4, ZSTD: len(record_batch._CODECS) */
#define NO_EPOCH (-((int64_t)1 << 40))
#define N_STATE 18
#define RELEASE_GIL_BYTES 32768
#define HIST_SLOTS 16

static inline uint32_t
be_u32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline int32_t
be_i32(const uint8_t *p)
{
    return (int32_t)be_u32(p);
}

static inline int16_t
be_i16(const uint8_t *p)
{
    return (int16_t)(uint16_t)((unsigned)p[0] << 8 | (unsigned)p[1]);
}

static inline int64_t
be_i64(const uint8_t *p)
{
    return (int64_t)((uint64_t)be_u32(p) << 32 | (uint64_t)be_u32(p + 4));
}

typedef struct {
    int64_t first, first_ts, last, batches, records, txn, ctl, codecs, max_ts, off_max;
    int64_t epoch, epoch_first;
    int64_t iv_open, iv_so, iv_bs, iv_mx, iv_rmx, iv_cnt;
} sum_state_t;

/* a growable array of int64 rows of `width` values */
typedef struct {
    int64_t *v;
    size_t rows, cap, width;
    int failed;
} rows_t;

static void
rows_push(rows_t *a, const int64_t *row)
{
    if (a->failed) {
        return;
    }
    if (a->rows == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        int64_t *v = realloc(a->v, cap * a->width * sizeof(int64_t));
        if (v == NULL) {
            a->failed = 1;
            return;
        }
        a->v = v;
        a->cap = cap;
    }
    memcpy(a->v + a->rows * a->width, row, a->width * sizeof(int64_t));
    a->rows++;
}

typedef enum { R_END, R_SHORT, R_MAGIC, R_INVALID, R_TORN, R_CRC, R_WIDE, N_REASONS } reason_t;
static const char *const reason_names[N_REASONS] = {"end",  "short", "magic", "invalid",
                                                    "torn", "crc",   "wide"};
static PyObject *reason_objects[N_REASONS];

typedef struct {
    /* in */
    const uint8_t *buf;
    Py_ssize_t start, end, base;
    int verify_crc, want_crc, one_pass;
    int64_t interval_bytes, histogram_ms;
    /* in/out */
    uint32_t reg; /* the object's CRC register */
    sum_state_t s;
    /* out */
    Py_ssize_t stop;
    reason_t reason;
    rows_t intervals, runs, hist;
} walk_t;

static void
hist_flush(rows_t *out, int64_t slots[HIST_SLOTS][3], int *used)
{
    for (int i = 0; i < *used; i++) {
        rows_push(out, slots[i]);
    }
    *used = 0;
}

/* The walk itself: no Python API (may run without the GIL). */
static void
walk(walk_t *w)
{
    const uint8_t *b = w->buf;
    sum_state_t s = w->s;
    uint32_t reg = w->reg;
    const crc_raw_fn raw = crc_raw_auto;
    k_cache_t kc = {UINT64_MAX, 0};
    int64_t hist[HIST_SLOTS][3];
    int hist_used = 0;
    reason_t reason = R_END;
    Py_ssize_t pos = w->start;
    const Py_ssize_t end = w->end;
    while (pos < end) {
        const Py_ssize_t remaining = end - pos;
        const uint8_t *p = b + pos;
        if (remaining < V2_MAGIC_OFFSET + 1) {
            reason = R_SHORT;
            break;
        }
        if (p[OFF_MAGIC] != 2) {
            reason = R_MAGIC;
            break;
        }
        const int32_t batch_length = be_i32(p + OFF_BATCH_LENGTH);
        if (batch_length < V2_MIN_BATCH_LENGTH) {
            reason = R_INVALID;
            break;
        }
        if ((int64_t)batch_length + V2_LOG_OVERHEAD > (int64_t)remaining) {
            reason = R_TORN;
            break;
        }
        const int16_t attributes = be_i16(p + OFF_ATTRIBUTES);
        const int32_t record_count = be_i32(p + OFF_RECORD_COUNT);
        const int32_t delta = be_i32(p + OFF_LAST_OFFSET_DELTA);
        if ((attributes & ATTR_CODEC_MASK) >= N_CODECS || record_count < 0 || delta < 0) {
            reason = R_INVALID;
            break;
        }
        const int64_t base_offset = be_i64(p + OFF_BASE_OFFSET);
        int64_t last;
        if (__builtin_add_overflow(base_offset, (int64_t)delta, &last)) {
            reason = R_WIDE;
            break;
        }
        const size_t size = (size_t)batch_length + V2_LOG_OVERHEAD;
        const size_t body = size - V2_CRC_START;
        if (w->verify_crc) {
            uint32_t head_reg = 0;
            if (w->want_crc) {
                head_reg = raw(reg, p, V2_CRC_START);
            }
            const uint32_t body_reg = raw(0xFFFFFFFFu, p + V2_CRC_START, body);
            if (~body_reg != be_u32(p + OFF_CRC)) {
                reason = R_CRC;
                break;
            }
            if (w->want_crc) {
                if (crc_have_clmul && w->one_pass) {
                    /* raw(r, B) = raw(~0, B) ^ Z_L(r ^ ~0) */
                    reg = body_reg ^ crc_shift(head_reg ^ 0xFFFFFFFFu, body, &kc);
                }
                else {
                    reg = raw(head_reg, p + V2_CRC_START, body); /* the batch is in cache */
                }
            }
        }
        else if (w->want_crc) {
            reg = raw(reg, p, size);
        }
        /* accepted: book it */
        const int64_t position = (int64_t)w->base + (int64_t)pos;
        const int64_t first_ts = be_i64(p + OFF_FIRST_TIMESTAMP);
        const int64_t max_ts = be_i64(p + OFF_MAX_TIMESTAMP);
        const int64_t epoch = be_i32(p + OFF_LEADER_EPOCH);
        const int is_control = (attributes & ATTR_CONTROL) != 0;
        const int64_t prev_last = s.last;
        if (s.first < 0) {
            s.first = base_offset;
            s.first_ts = first_ts;
        }
        s.last = last;
        s.batches++;
        s.records += record_count;
        s.txn += (attributes & ATTR_TRANSACTIONAL) != 0;
        s.ctl += is_control;
        s.codecs |= (int64_t)1 << (attributes & ATTR_CODEC_MASK);
        if (max_ts > s.max_ts) {
            s.max_ts = max_ts;
            s.off_max = last;
        }
        if (epoch != s.epoch) {
            if (s.epoch != NO_EPOCH) {
                const int64_t row[3] = {s.epoch, s.epoch_first, prev_last};
                rows_push(&w->runs, row);
            }
            s.epoch = epoch;
            s.epoch_first = base_offset;
        }
        const int64_t record_max = record_count ? max_ts : -1;
        if (s.iv_open && position + (int64_t)size - s.iv_bs <= w->interval_bytes) {
            if (max_ts > s.iv_mx) {
                s.iv_mx = max_ts;
            }
            if (record_max > s.iv_rmx) {
                s.iv_rmx = record_max;
            }
            s.iv_cnt += record_count;
        }
        else {
            if (s.iv_open) {
                const int64_t row[7] = {s.iv_so, prev_last, s.iv_bs, position,
                                        s.iv_mx, s.iv_rmx,  s.iv_cnt};
                rows_push(&w->intervals, row);
            }
            s.iv_open = 1;
            s.iv_so = base_offset;
            s.iv_bs = position;
            s.iv_mx = max_ts;
            s.iv_rmx = record_max;
            s.iv_cnt = record_count;
        }
        if (max_ts >= 0) {
            const int64_t bucket = max_ts - max_ts % w->histogram_ms;
            const int64_t recs = is_control ? 0 : record_count;
            int i = 0;
            while (i < hist_used && hist[i][0] != bucket) {
                i++;
            }
            if (i == hist_used) {
                if (hist_used == HIST_SLOTS) {
                    hist_flush(&w->hist, hist, &hist_used);
                    i = 0;
                }
                hist[i][0] = bucket;
                hist[i][1] = 0;
                hist[i][2] = 0;
                hist_used++;
            }
            hist[i][1] += recs;
            hist[i][2] += (int64_t)size;
        }
        pos += (Py_ssize_t)size;
    }
    hist_flush(&w->hist, hist, &hist_used);
    w->s = s;
    w->reg = reg;
    w->stop = pos;
    w->reason = reason;
}

/* ==== Python glue ========================================================================= */

static int checked_constants = 0;

/* 0 if module.name == value, else -1 with ImportError set */
static int
check_constant(PyObject *module, const char *name, long value)
{
    PyObject *obj = PyObject_GetAttrString(module, name);
    if (obj == NULL) {
        return -1;
    }
    long got = PyLong_Check(obj) ? PyLong_AsLong(obj) : -1;
    Py_DECREF(obj);
    if (got == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (got != value) {
        PyErr_Format(PyExc_ImportError,
                     "segment_lib._summary: %s is %ld in Python but %ld in C", name, got, value);
        return -1;
    }
    return 0;
}

static int
check_constants(void)
{
    if (checked_constants) {
        return 0;
    }
    PyObject *records = PyImport_ImportModule("segment_lib.records");
    PyObject *record_batch = records ? PyImport_ImportModule("segment_lib.record_batch") : NULL;
    int rc = -1;
    if (record_batch == NULL) {
        goto done;
    }
    if (check_constant(records, "LOG_OVERHEAD", V2_LOG_OVERHEAD) < 0
        || check_constant(records, "MAGIC_OFFSET", V2_MAGIC_OFFSET) < 0
        || check_constant(record_batch, "CRC_START", V2_CRC_START) < 0
        || check_constant(record_batch, "RECORDS_START", V2_RECORDS_START) < 0
        || check_constant(record_batch, "MIN_BATCH_LENGTH", V2_MIN_BATCH_LENGTH) < 0
        || check_constant(record_batch, "_CODEC_MASK", ATTR_CODEC_MASK) < 0
        || check_constant(record_batch, "_TRANSACTIONAL_BIT", ATTR_TRANSACTIONAL) < 0
        || check_constant(record_batch, "_CONTROL_BIT", ATTR_CONTROL) < 0) {
        goto done;
    }
    PyObject *codecs = PyObject_GetAttrString(record_batch, "_CODECS");
    if (codecs == NULL) {
        goto done;
    }
    Py_ssize_t n = PyObject_Length(codecs);
    Py_DECREF(codecs);
    if (n != N_CODECS) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ImportError,
                         "segment_lib._summary: %zd codecs in Python, %d in C", n, N_CODECS);
        }
        goto done;
    }
    checked_constants = 1;
    rc = 0;
done:
    Py_XDECREF(records);
    Py_XDECREF(record_batch);
    return rc;
}

static PyObject *
rows_to_list(rows_t *a)
{
    if (a->failed) {
        return PyErr_NoMemory();
    }
    PyObject *out = PyList_New((Py_ssize_t)a->rows);
    if (out == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < a->rows; i++) {
        PyObject *t = PyTuple_New((Py_ssize_t)a->width);
        if (t == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        for (size_t j = 0; j < a->width; j++) {
            PyObject *v = PyLong_FromLongLong(a->v[i * a->width + j]);
            if (v == NULL) {
                Py_DECREF(t);
                Py_DECREF(out);
                return NULL;
            }
            PyTuple_SET_ITEM(t, (Py_ssize_t)j, v);
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, t);
    }
    return out;
}

PyDoc_STRVAR(summarize_v2_doc,
"summarize_v2(buf, start, end, base, verify_crc, crc, state, interval_bytes, histogram_ms,\n"
"             one_pass=True) -> (stop, reason, crc, state, intervals, runs, histogram)\n"
"\n"
"Walk the magic-2 batches of buf[start:end] (positions reported as base + buffer position),\n"
"checking each one's CRC-32C when verify_crc, and fold them into `state` (a tuple of 18 ints,\n"
"see INITIAL_STATE and the module source).  Returns where and why the walk stopped ('end',\n"
"'short', 'magic', 'invalid', 'torn', 'crc', 'wide'), the CRC-32C continued from `crc` over\n"
"[start, stop) (None when crc is None), the new state, and the closed intervals\n"
"(start_offset, end_offset, byte_start, byte_end, max_ts, record_max_ts, records), the closed\n"
"leader-epoch runs (epoch, first_offset, last_offset) and histogram contributions\n"
"(bucket, records, bytes).  Never raises for bad bytes.  one_pass=False makes the CRC-32C\n"
"take a second pass over each batch after its check instead of combining (as on CPUs\n"
"without PCLMULQDQ; for tests).");

static PyObject *
summarize_v2(PyObject *self, PyObject *args)
{
    PyObject *bufobj, *crcobj, *stateobj;
    Py_ssize_t start, end, base;
    int verify_crc, one_pass = 1;
    long long interval_bytes, histogram_ms;
    if (!PyArg_ParseTuple(args, "OnnnpOO!LL|p:summarize_v2", &bufobj, &start, &end, &base,
                          &verify_crc, &crcobj, &PyTuple_Type, &stateobj, &interval_bytes,
                          &histogram_ms, &one_pass)) {
        return NULL;
    }
    if (check_constants() < 0) {
        return NULL;
    }
    if (interval_bytes <= 0 || histogram_ms <= 0) {
        PyErr_SetString(PyExc_ValueError, "interval_bytes and histogram_ms must be positive");
        return NULL;
    }
    if (PyTuple_GET_SIZE(stateobj) != N_STATE) {
        PyErr_Format(PyExc_ValueError, "state must have %d items", N_STATE);
        return NULL;
    }
    walk_t w;
    memset(&w, 0, sizeof(w));
    int64_t *fields = &w.s.first;
    for (Py_ssize_t i = 0; i < N_STATE; i++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(stateobj, i));
        if (v == -1 && PyErr_Occurred()) {
            return NULL; /* OverflowError for a value beyond int64: the caller books in Python */
        }
        fields[i] = (int64_t)v;
    }
    w.want_crc = crcobj != Py_None;
    if (w.want_crc) {
        unsigned long long c = PyLong_AsUnsignedLongLong(crcobj);
        if (c == (unsigned long long)-1 && PyErr_Occurred()) {
            return NULL;
        }
        if (c > 0xFFFFFFFFull) {
            PyErr_SetString(PyExc_ValueError, "crc must be a 32-bit value");
            return NULL;
        }
        w.reg = ~(uint32_t)c;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(bufobj, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (start < 0 || end > view.len || base < 0) {
        PyErr_Format(PyExc_ValueError,
                     "summarize_v2: need 0 <= start, end <= len(buf) = %zd and base >= 0, got "
                     "%zd, %zd, %zd",
                     view.len, start, end, base);
        PyBuffer_Release(&view);
        return NULL;
    }
    w.buf = (const uint8_t *)view.buf;
    w.start = start;
    w.end = end < start ? start : end;
    w.base = base;
    w.verify_crc = verify_crc;
    w.one_pass = one_pass;
    w.interval_bytes = interval_bytes;
    w.histogram_ms = histogram_ms;
    w.intervals.width = 7;
    w.runs.width = 3;
    w.hist.width = 3;
    if (w.end - w.start >= RELEASE_GIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        walk(&w);
        Py_END_ALLOW_THREADS
    }
    else {
        walk(&w);
    }
    PyBuffer_Release(&view);
    PyObject *intervals = rows_to_list(&w.intervals);
    PyObject *runs = intervals ? rows_to_list(&w.runs) : NULL;
    PyObject *hist = runs ? rows_to_list(&w.hist) : NULL;
    free(w.intervals.v);
    free(w.runs.v);
    free(w.hist.v);
    PyObject *state = hist ? PyTuple_New(N_STATE) : NULL;
    if (state == NULL) {
        Py_XDECREF(intervals);
        Py_XDECREF(runs);
        Py_XDECREF(hist);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < N_STATE; i++) {
        PyObject *v = PyLong_FromLongLong(fields[i]);
        if (v == NULL) {
            Py_DECREF(state);
            Py_DECREF(intervals);
            Py_DECREF(runs);
            Py_DECREF(hist);
            return NULL;
        }
        PyTuple_SET_ITEM(state, i, v);
    }
    PyObject *crc_out;
    if (w.want_crc) {
        crc_out = PyLong_FromUnsignedLong(~w.reg);
    }
    else {
        crc_out = Py_None;
        Py_INCREF(crc_out);
    }
    if (crc_out == NULL) {
        Py_DECREF(state);
        Py_DECREF(intervals);
        Py_DECREF(runs);
        Py_DECREF(hist);
        return NULL;
    }
    PyObject *reason = reason_objects[w.reason];
    Py_INCREF(reason);
    return Py_BuildValue("(nNNNNNN)", w.stop, reason, crc_out, state, intervals, runs, hist);
}

/* the raw update a test asks for: "auto" (the walk's), "table" (portable), "x3" (crc32
 * instruction, three streams), "fold" (VPCLMULQDQ); NULL with ValueError when unavailable */
static crc_raw_fn
raw_by_name(const char *impl)
{
    crc_raw_fn fn = NULL;
    if (impl == NULL || strcmp(impl, "auto") == 0) {
        fn = crc_raw_auto;
    }
    else if (strcmp(impl, "table") == 0) {
        fn = crc_raw_table;
    }
    else if (strcmp(impl, "x3") == 0) {
        fn = crc_raw_x3;
    }
    else if (strcmp(impl, "fold") == 0) {
        fn = crc_raw_folding;
    }
    if (fn == NULL) {
        PyErr_Format(PyExc_ValueError, "crc32c impl %s is unknown or not available on this CPU",
                     impl);
    }
    return fn;
}

/* the shift a test asks for: "auto" (the walk's) or "table" (portable) */
static int
impl_is_table(const char *impl, int *table)
{
    if (impl == NULL || strcmp(impl, "auto") == 0) {
        *table = 0;
        return 0;
    }
    if (strcmp(impl, "table") == 0) {
        *table = 1;
        return 0;
    }
    PyErr_Format(PyExc_ValueError, "impl must be 'auto' or 'table', not %s", impl);
    return -1;
}

PyDoc_STRVAR(crc32c_doc,
"crc32c(data, value=0, impl='auto') -> int\n"
"\n"
"CRC-32C of `data` continuing from `value` (as crc32c.crc32c(data, value)), with the raw\n"
"update summarize_v2 uses ('auto'), the portable table ('table'), the crc32 instruction in\n"
"three streams ('x3') or VPCLMULQDQ folding ('fold'); ValueError where the CPU lacks it.\n"
"For tests and benchmarks.");

static PyObject *
py_crc32c(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "value", "impl", NULL};
    Py_buffer data;
    unsigned long value = 0;
    const char *impl = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|ks:crc32c", kwlist, &data, &value,
                                     &impl)) {
        return NULL;
    }
    crc_raw_fn fn = raw_by_name(impl);
    if (fn == NULL || value > 0xFFFFFFFFul) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError, "value must be a 32-bit value");
        }
        PyBuffer_Release(&data);
        return NULL;
    }
    uint32_t reg;
    Py_BEGIN_ALLOW_THREADS
    reg = fn(~(uint32_t)value, (const uint8_t *)data.buf, (size_t)data.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(~reg);
}

PyDoc_STRVAR(crc32c_combine_doc,
"crc32c_combine(crc_a, crc_b, len_b, impl='auto') -> int\n"
"\n"
"The CRC-32C of A || B from crc_a = CRC-32C(A), crc_b = CRC-32C(B) and len(B), with the\n"
"shift summarize_v2 uses ('auto': PCLMULQDQ where the CPU has it) or the portable one\n"
"('table').  For tests.");

static PyObject *
py_crc32c_combine(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"crc_a", "crc_b", "len_b", "impl", NULL};
    unsigned long a, bcrc;
    unsigned long long n;
    const char *impl = NULL;
    int table;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "kkK|s:crc32c_combine", kwlist, &a, &bcrc,
                                     &n, &impl)) {
        return NULL;
    }
    if (impl_is_table(impl, &table) < 0) {
        return NULL;
    }
    if (a > 0xFFFFFFFFul || bcrc > 0xFFFFFFFFul) {
        PyErr_SetString(PyExc_ValueError, "CRCs must be 32-bit values");
        return NULL;
    }
    /* raw(r, B) = raw(~0, B) ^ Z_n(r ^ ~0), r = ~crc_a, raw(~0, B) = ~crc_b */
    uint32_t v = ~(uint32_t)a ^ 0xFFFFFFFFu;
    uint32_t shifted;
    if (table) {
        shifted = crc_shift_portable(v, n);
    }
    else {
        k_cache_t kc = {UINT64_MAX, 0};
        shifted = crc_shift(v, n, &kc);
    }
    return PyLong_FromUnsignedLong(~(~(uint32_t)bcrc ^ shifted));
}

static PyMethodDef methods[] = {
    {"summarize_v2", (PyCFunction)summarize_v2, METH_VARARGS, summarize_v2_doc},
    {"crc32c", (PyCFunction)(void (*)(void))py_crc32c, METH_VARARGS | METH_KEYWORDS, crc32c_doc},
    {"crc32c_combine", (PyCFunction)(void (*)(void))py_crc32c_combine,
     METH_VARARGS | METH_KEYWORDS, crc32c_combine_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "segment_lib._summary",
    "Compiled one-pass summary of magic-2 batches (see the source for the contract).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit__summary(void)
{
    crc_init();
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    for (int i = 0; i < N_REASONS; i++) {
        reason_objects[i] = PyUnicode_InternFromString(reason_names[i]);
        if (reason_objects[i] == NULL) {
            Py_DECREF(m);
            return NULL;
        }
    }
    PyObject *initial = Py_BuildValue("(LLLLLLLLLLLLLLLLLL)", (long long)-1, (long long)-1,
                                      (long long)-1, 0LL, 0LL, 0LL, 0LL, 0LL, (long long)-1,
                                      (long long)-1, (long long)NO_EPOCH, (long long)-1, 0LL, 0LL,
                                      0LL, (long long)-1, (long long)-1, 0LL);
    if (initial == NULL || PyModule_AddObject(m, "INITIAL_STATE", initial) < 0
        || PyModule_AddStringConstant(m, "CRC32C_IMPL", crc_impl_name) < 0
        || PyModule_AddIntConstant(m, "NO_EPOCH", (long)NO_EPOCH) < 0) {
        Py_XDECREF(initial);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
