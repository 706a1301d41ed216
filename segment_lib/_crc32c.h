/*
 * segment_lib/_crc32c.h: the CRC-32C of the compiled modules (segment_lib._speedups' batch scan
 * and its crc32c(); segment_lib._summary's one-pass walk, crc32c() and crc32c_combine()).
 *
 * One copy for both: everything here is `static` (each extension gets its own tables, filled
 * by its own crc_init() at import); include it after <Python.h> (the Python glue at the end
 * uses it).  setup.py lists it in both extensions' `depends`.
 *
 * Why here and hand-written: the scan and the walk verify each batch's CRC-32C inside their C
 * loops.  The `crc32c` package (used by the Python path) has no C API, and calling it back
 * through Python for every batch (a memoryview slice plus a call, ~0.15 us) would cost more
 * than the rest of the per-batch work (~0.1 us); no other maintained Python dependency exposes
 * a C-callable CRC-32C.  So the checksum is computed here, and the tests check every
 * implementation below against the `crc32c` package: tests/test_scan_speedups.py (every length
 * up to 2400 bytes at every misalignment, random buffers up to 200 KB, the RFC 3720 check
 * values) and tests/test_summary_speedups.py (every start alignment to 64 bytes, lengths around
 * every kernel's thresholds, the combine).
 *
 * Conventions: the CRC-32C "register" r (reflected polynomial 0x82F63B78) is what the SSE4.2
 * `crc32` instruction and the byte table update; the checksum of data d continuing from a
 * previous checksum c is ~raw(~c, d), raw being the register update without conditioning, as
 * for crc32c.crc32c(d, value=c).
 *
 * Polynomial arithmetic mod P in the reflected representation: bit i of a 32-bit value is the
 * coefficient of x^(31-i) (bit 31 is the constant term).  gf_mul is the portable multiply.
 * With PCLMULQDQ, for a, b in this representation, clmul(a, b) holds a*b shifted so that the
 * crc32 instruction applied to it (crc32_u64(0, clmul(a, b))) gives a * b * x^33 mod P (the
 * instruction multiplies its 64-bit operand by x^32 and reduces it, and the reflected
 * product is one bit off).  So with K(n) = x^(8n - 33) mod P, Z_n(r) = crc32_u64(0, clmul(r,
 * K(n))), Z_n being the linear map "append n zero bytes"; and the same operation on two such
 * constants gives K(a) (x) K(b) = K(a + b), so K(n) is the product of the table entries
 * K(2^k) of the bits of n.
 *
 * The raw updates, by the names crc32c(impl=...) takes; the best the CPU has is chosen once at
 * crc_init() (crc_raw_auto, reported as CRC32C_IMPL):
 *   - "table": slicing-by-8 in portable C (8 tables of 256 entries built at init); any CPU
 *     (the callers then leave CRC-verifying work to the `crc32c` package's Python path, whose
 *     software code is faster);
 *   - "sse4.2": one stream of the `crc32` instruction, 8 bytes at a time.  Each instruction
 *     depends on the previous one's result (latency 3 cycles, throughput 1 per cycle on current
 *     x86 cores), so one stream uses a third of the unit;
 *   - "sse4.2x3" (without PCLMULQDQ) / "sse4.2x3+pclmul": the standard 3-way interleave.  A
 *     block of 3L bytes A|B|C is run as three independent streams: rA = raw(r, A), rB =
 *     raw(0, B), rC = raw(0, C), issued in the same loop so the three dependency chains
 *     overlap.  raw is affine in the register: raw(r, X) = Z_L(r) ^ raw(0, X).  Hence
 *     raw(r, A|B|C) = Z_L(Z_L(rA) ^ rB) ^ rC: the combine step, one carry-less multiplication
 *     by K(L) with PCLMULQDQ, else four 256-entry tables, one per register byte (Z_L is linear
 *     over GF(2); the tables are built at init from the images of the 32 basis vectors).
 *     L = 256 (CRC_BLOCK), then a single stream for the tail (< 768 bytes).  Why so small: the
 *     scan reads batches from the page cache, i.e. from memory, not from CPU caches, and there
 *     the stream spacing decides the speed.  Measured on the benchmark segments (AMD EPYC, see
 *     docs/performance.md), a CRC over 66 MB in memory took (best of 15) 3.3 ms with L = 256,
 *     3.7 with 128, 4.9 with 320, 5.4 with 384, 4.8 with 4096, 10.4 with 768 (presumably the
 *     hardware prefetchers follow three nearby streams as one; spread-out streams defeat
 *     them), while the combine step per 768 bytes costs little when the data is cached
 *     (19.6 GB/s on a cached 16 KiB buffer vs 22 GB/s with L = 768).  The start is first
 *     aligned to 8 bytes, so that every load of every stream is aligned: loads straddling
 *     cache lines nearly halved the throughput on data streamed from memory (batches start at
 *     any byte).  The streams prefetch 2 KiB ahead (on page-cached segments, AMD EPYC, 1 GiB
 *     mapped, the prefetch took the pass from 75 to 66 ms/GiB);
 *   - "avx512-vpclmulqdq" (CPUs with AVX-512 and VPCLMULQDQ, compilers that know them):
 *     carry-less folding, 256 bytes per round (see "folding" below), as fast as a plain read
 *     of mapped page-cache memory.
 * Two more names, kept for segment_lib._summary's tests: "x3" is the 3-way kernel the CPU
 * gets (with PCLMULQDQ if it has it), "fold" is "avx512-vpclmulqdq".
 *
 * The hardware functions are compiled with __attribute__((target(...))) so the modules
 * themselves need no -msse4.2 etc., and used only if __builtin_cpu_supports says so.  Without
 * x86-64 and GCC/clang only the table is compiled, with the same results (checked by building
 * with `-include` of a file that includes <Python.h> and the C headers, then undefines
 * __x86_64__, and running the tests: -U__x86_64__ alone breaks glibc's own headers).
 */
#ifndef SEGMENT_LIB_CRC32C_H
#define SEGMENT_LIB_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u /* CRC-32C (Castagnoli), bit-reflected */
#define CRC_ONE 0x80000000u     /* the polynomial 1 */
#define CRC_X 0x40000000u       /* x (bit 31 - 1) */
#define CRC_X8 0x00800000u      /* x^8 (bit 31 - 8) */
/* bytes per stream and round of the 3-way interleave: see the header comment for the choice */
#define CRC_BLOCK 256
#define CRC_PREFETCH 2048 /* bytes ahead of the streams prefetched */

typedef uint32_t (*crc_raw_fn)(uint32_t r, const uint8_t *p, size_t n);

static uint32_t crc_table[8][256]; /* slicing-by-8: crc_table[k][b] = b advanced k+1 bytes */
static uint32_t crc_zeros[4][256]; /* Z_CRC_BLOCK, one table per register byte */
static uint32_t crc_k_pow2[64];    /* K(2^k) = x^(8 * 2^k - 33) mod P */
static uint32_t crc_k_block;       /* K(CRC_BLOCK) */
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

/* a^e mod P (square-and-multiply) */
static uint32_t
gf_pow(uint32_t a, uint64_t e)
{
    uint32_t r = CRC_ONE;
    while (e) {
        if (e & 1) {
            r = gf_mul(r, a);
        }
        a = gf_mul(a, a);
        e >>= 1;
    }
    return r;
}

/* Z_n(r) portably: r * (x^8)^n (tests, init and the rare CPU without PCLMULQDQ; the walks do
 * not use it) */
static inline uint32_t
crc_shift_portable(uint32_t r, uint64_t n)
{
    return gf_mul(r, gf_pow(CRC_X8, n));
}

/* the register advanced over n bytes, table-driven (no conditioning) */
static uint32_t
crc_raw_table(uint32_t r, const uint8_t *p, size_t n)
{
    while (n >= 8) {
        /* the first 4 bytes fold into the register (little-endian by construction, not by
         * host byte order), the last 4 are looked up directly */
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

/* Z_CRC_BLOCK(r) by the four tables */
static inline uint32_t
crc_zeros_apply(uint32_t r)
{
    return crc_zeros[0][r & 0xFF] ^ crc_zeros[1][(r >> 8) & 0xFF] ^ crc_zeros[2][(r >> 16) & 0xFF]
           ^ crc_zeros[3][r >> 24];
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
    const uint32_t x_inv33 = gf_pow(x_inv, 33);
    uint32_t x8pow = CRC_X8; /* x^(8 * 2^k), k = 0 */
    for (int k = 0; k < 64; k++) {
        crc_k_pow2[k] = gf_mul(x8pow, x_inv33);
        x8pow = gf_mul(x8pow, x8pow);
    }
    crc_k_block = crc_k_pow2[8]; /* K(256) = K(2^8) */
    crc_f2112 = gf_pow(CRC_X, 2112 - 1);
    crc_f2048 = gf_pow(CRC_X, 2048 - 1);
    crc_f576 = gf_pow(CRC_X, 576 - 1);
    crc_f512 = gf_pow(CRC_X, 512 - 1);
    crc_f192 = gf_pow(CRC_X, 192 - 1);
    crc_f128 = gf_pow(CRC_X, 128 - 1);
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

/* "sse4.2": one stream, 8 bytes per instruction, after aligning (loads straddling cache lines
 * are slow on data streamed from memory); also the tail of the other kernels */
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

/* K(n) from the K(2^k) table (0 for n = 0, which callers do not ask for) */
TARGET_CLMUL static inline uint32_t
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

/* "sse4.2x3" / "sse4.2x3+pclmul": rounds of 3 x CRC_BLOCK bytes, three independent streams,
 * then the combine step (COMBINE = Z_CRC_BLOCK) */
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
 * (tests/test_summary_speedups.py, tests/test_scan_speedups.py), first as a Python model of
 * exactly these steps.
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

/* ---- the choice, once at import ---- */

static crc_raw_fn crc_raw_auto = crc_raw_table; /* the best this CPU has */
static crc_raw_fn crc_raw_x3 = NULL;      /* the crc32-instruction 3-way kernel, when the CPU has it */
static crc_raw_fn crc_raw_folding = NULL; /* the VPCLMULQDQ kernel, when the CPU has it */
#ifdef HAVE_X86_CRC
static int crc_have_sse42 = 0; /* the CPU has the crc32 instruction */
static int crc_have_clmul = 0; /* ... and PCLMULQDQ (Z_n by one multiplication) */
#else
#define crc_have_clmul 0 /* no x86 kernels compiled */
#endif
static const char *crc_impl_name = "table"; /* the name of crc_raw_auto (CRC32C_IMPL) */

static void
crc_init(void)
{
    crc_init_tables();
#ifdef HAVE_X86_CRC
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        crc_have_sse42 = 1;
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

/* The raw update called `name` (NULL: "auto"; see the header comment for the names), or NULL
 * when the name is unknown or the CPU lacks it. */
static crc_raw_fn
crc_raw_by_name(const char *name)
{
    if (name == NULL || strcmp(name, "auto") == 0) {
        return crc_raw_auto;
    }
    if (strcmp(name, "table") == 0) {
        return crc_raw_table;
    }
    if (strcmp(name, "x3") == 0) {
        return crc_raw_x3;
    }
    if (strcmp(name, "fold") == 0 || strcmp(name, "avx512-vpclmulqdq") == 0) {
        return crc_raw_folding;
    }
#ifdef HAVE_X86_CRC
    if (crc_have_sse42 && strcmp(name, "sse4.2") == 0) {
        return crc_raw_sse42_1;
    }
    if (crc_have_sse42 && strcmp(name, "sse4.2x3") == 0) {
        return crc_raw_x3_table;
    }
    if (crc_have_clmul && strcmp(name, "sse4.2x3+pclmul") == 0) {
        return crc_raw_x3_clmul;
    }
#endif
    return NULL;
}

/* Z_n(r) with the fastest method available; `cache` remembers the last (n, K(n)) */
typedef struct {
    uint64_t n;
    uint32_t k;
} k_cache_t;

#define K_CACHE_EMPTY {UINT64_MAX, 0}

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

/* ---- Python glue: the modules' CRC32C_IMPL and crc32c(data, value=0, impl='auto') ----
 *
 * Each module lists CRC32C_METHOD_DEF in its method table and calls crc_module_init() from its
 * init.  A `value` beyond 32 bits is reduced mod 2^32 as the crc32c package does (the default:
 * segment_lib._speedups, whose crc32c mirrors the package), or refused with ValueError where
 * the module defines CRC32C_REFUSE_WIDE_VALUE to 1 before including this file
 * (segment_lib._summary). */
#ifndef CRC32C_REFUSE_WIDE_VALUE
#define CRC32C_REFUSE_WIDE_VALUE 0
#endif

/* At a module's init: choose the kernels (crc_init) and publish the choice as the module's
 * CRC32C_IMPL; 0, or -1 with the error set. */
static int
crc_module_init(PyObject *module)
{
    crc_init();
    return PyModule_AddStringConstant(module, "CRC32C_IMPL", crc_impl_name);
}

/* Spans at least this long are checksummed with the GIL released, as the `crc32c` package does
 * by default (its threshold too), so other threads keep running during long checksums. */
#define CRC_RELEASE_GIL_BYTES 32768

PyDoc_STRVAR(crc32c_doc,
"crc32c(data, value=0, impl='auto') -> int\n"
"\n"
"CRC-32C of `data` continuing from the checksum `value` (as crc32c.crc32c(data, value)).\n"
"`impl` picks the implementation: 'auto' (the one this module's walk uses, see CRC32C_IMPL),\n"
"'table' (portable slicing-by-8), 'sse4.2' (one crc32 instruction stream), 'sse4.2x3' (three\n"
"streams, table combine), 'sse4.2x3+pclmul' (three streams, PCLMULQDQ combine),\n"
"'avx512-vpclmulqdq' or 'fold' (VPCLMULQDQ folding), 'x3' (the three-stream one this CPU\n"
"gets); the hardware ones raise ValueError where the CPU lacks them.  For tests and\n"
"benchmarks.");

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
    const crc_raw_fn fn = crc_raw_by_name(impl);
    if (fn == NULL || (CRC32C_REFUSE_WIDE_VALUE && value > 0xFFFFFFFFul)) {
        if (fn == NULL) {
            PyErr_Format(PyExc_ValueError,
                         "crc32c impl %s is unknown or not available on this CPU", impl);
        }
        else {
            PyErr_SetString(PyExc_ValueError, "value must be a 32-bit value");
        }
        PyBuffer_Release(&data);
        return NULL;
    }
    const uint32_t start = ~(uint32_t)value;
    uint32_t reg;
    if (data.len >= CRC_RELEASE_GIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        reg = fn(start, (const uint8_t *)data.buf, (size_t)data.len);
        Py_END_ALLOW_THREADS
    }
    else {
        reg = fn(start, (const uint8_t *)data.buf, (size_t)data.len);
    }
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(~reg);
}

#define CRC32C_METHOD_DEF                                                                       \
    {"crc32c", (PyCFunction)(void (*)(void))py_crc32c, METH_VARARGS | METH_KEYWORDS, crc32c_doc}

#endif /* SEGMENT_LIB_CRC32C_H */
