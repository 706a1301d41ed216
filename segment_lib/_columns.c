/*
 * segment_lib._columns: magic-2 records decoded straight into column buffers laid out as
 * Apache Arrow arrays (no Python object per record), for exporters that build columnar files.
 *
 *   ColumnBuffers            growable buffers, one set per column (below);
 *   ColumnBuffers.append_v2  decode one batch's (decompressed) records section into them;
 *   ColumnBuffers.take       hand the buffers over (bytearrays, no copy) and start empty ones.
 *
 * segment_lib knows bytes only: this module knows nothing of pyarrow.  The buffers follow
 * Arrow's columnar format (little-endian values, LSB-first validity bitmaps, int32 offsets
 * starting at 0), so kafka_archive.export.columns wraps them with pa.Array.from_buffers
 * without copying.  Columns (per record, in offset order):
 *
 *   offset        int64                 base_offset + offsetDelta
 *   timestamp     int64 + validity      the broker-reported timestamp (LogAppendTime applied);
 *                                       null when negative (no timestamp)
 *   key, value    binary: validity, int32 offsets, data (null: length -1)
 *   ts_type       uint8                 timestamp type + 1 (0 none, 1 CreateTime, 2 LogAppendTime)
 *   leader_epoch  int32 + validity      the batch's; null when negative
 *   producer_id   int64 + validity      the batch's; null when negative
 *   headers       list offsets int32 (into the header entries), then per header entry:
 *                 name (string: int32 offsets, data) and value (binary with validity)
 *
 * Contract of append_v2: it appends exactly the records segment_lib.record_batch's reference
 * decoder (_decode_records_python) returns for the same arguments, or nothing.  It is *stricter*
 * than the reference, never looser: bytes the reference rejects, and also anything outside what
 * int64 columns hold (an offset outside int64, a timestamp above it: a negative one is null;
 * deltas are read as the reference reads them, up to 70 bits), make it return 0 with the buffers as they were; the caller then
 * decodes the batch the reference way, which raises the reference's error or returns what it
 * returns.  A batch
 * whose bytes would push an int32 offset past 2^31 - 1 makes it return -1 (nothing appended):
 * the caller takes the buffers and appends again to empty ones.  Header names must be strict
 * UTF-8 (what bytes.decode("utf-8") accepts), as in the reference.
 * tests/test_export_columns.py checks all of it against the reference with Hypothesis.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ---- growable buffers ------------------------------------------------------------------ */

/* One buffer: a bytearray (handed over by take() without a copy) of which `len` bytes are used;
 * `p` is its storage, valid until the next resize. */
typedef struct {
    PyObject *ba;
    char *p;
    Py_ssize_t len;
    Py_ssize_t cap;
} gbuf_t;

static int
gb_init(gbuf_t *g)
{
    g->ba = PyByteArray_FromStringAndSize(NULL, 0);
    if (g->ba == NULL) {
        return -1;
    }
    g->p = PyByteArray_AS_STRING(g->ba);
    g->len = 0;
    g->cap = 0;
    return 0;
}

static int
gb_grow(gbuf_t *g, Py_ssize_t need)
{
    Py_ssize_t cap = g->cap < PY_SSIZE_T_MAX / 2 ? g->cap * 2 : need;
    if (cap < need) {
        cap = need;
    }
    if (cap < 1024) {
        cap = 1024;
    }
    if (PyByteArray_Resize(g->ba, cap) < 0) {
        return -1;
    }
    g->p = PyByteArray_AS_STRING(g->ba);
    g->cap = cap;
    return 0;
}

static inline int
gb_reserve(gbuf_t *g, Py_ssize_t extra)
{
    return g->len + extra > g->cap ? gb_grow(g, g->len + extra) : 0;
}

/* (reserved before) */
static inline void
gb_put(gbuf_t *g, const void *src, size_t n)
{
    memcpy(g->p + g->len, src, n);
    g->len += (Py_ssize_t)n;
}

static inline int
gb_append(gbuf_t *g, const void *src, Py_ssize_t n)
{
    if (gb_reserve(g, n) < 0) {
        return -1;
    }
    gb_put(g, src, (size_t)n);
    return 0;
}

/* Arrow stores values little-endian; this build refuses big-endian hosts (module init). */
#define PUT_I64(g, v)                                                                              \
    do {                                                                                           \
        int64_t v_ = (v);                                                                          \
        gb_put((g), &v_, 8);                                                                       \
    } while (0)
#define PUT_I32(g, v)                                                                              \
    do {                                                                                           \
        int32_t v_ = (v);                                                                          \
        gb_put((g), &v_, 4);                                                                       \
    } while (0)

/* Set bit `row` of a validity bitmap (bytes up to row/8 reserved before) to `valid`. */
static inline void
bm_set(gbuf_t *g, int64_t row, int valid)
{
    Py_ssize_t byte = (Py_ssize_t)(row >> 3);
    if (byte >= g->len) {
        g->p[byte] = 0;
        g->len = byte + 1;
    }
    uint8_t mask = (uint8_t)(1u << (row & 7));
    if (valid) {
        g->p[byte] = (char)((uint8_t)g->p[byte] | mask);
    }
    else {
        g->p[byte] = (char)((uint8_t)g->p[byte] & (uint8_t)~mask);
    }
}

/* Set bits [row0, row0 + count) of a validity bitmap (bytes up to (row0 + count) / 8 reserved
 * before) to `valid`: whole bytes at once, for the columns a batch gives every row of. */
static void
bm_fill(gbuf_t *g, int64_t row0, int64_t count, int valid)
{
    int64_t row = row0;
    const int64_t end = row0 + count;
    for (; row < end && (row & 7); row++) {
        bm_set(g, row, valid);
    }
    const int64_t whole = (end - row) >> 3;
    if (whole > 0) {
        /* row is a multiple of 8 and every bit before it is set: the bitmap's length is row/8 */
        memset(g->p + (row >> 3), valid ? 0xFF : 0, (size_t)whole);
        g->len = (Py_ssize_t)((row >> 3) + whole);
        row += whole * 8;
    }
    for (; row < end; row++) {
        bm_set(g, row, valid);
    }
}

/* ---- the object ------------------------------------------------------------------------ */

enum {
    B_OFFSET,
    B_TS_VALID,
    B_TS,
    B_KEY_VALID,
    B_KEY_OFFSETS,
    B_KEY_DATA,
    B_VALUE_VALID,
    B_VALUE_OFFSETS,
    B_VALUE_DATA,
    B_TS_TYPE,
    B_EPOCH_VALID,
    B_EPOCH,
    B_PID_VALID,
    B_PID,
    B_HEADER_OFFSETS,
    B_HNAME_OFFSETS,
    B_HNAME_DATA,
    B_HVALUE_VALID,
    B_HVALUE_OFFSETS,
    B_HVALUE_DATA,
    N_BUFS
};

static const char *const buf_names[N_BUFS] = {
    "offset",         "timestamp_valid",     "timestamp",         "key_valid",
    "key_offsets",    "key_data",            "value_valid",       "value_offsets",
    "value_data",     "timestamp_type",      "leader_epoch_valid", "leader_epoch",
    "producer_id_valid", "producer_id",      "header_offsets",    "header_name_offsets",
    "header_name_data", "header_value_valid", "header_value_offsets", "header_value_data",
};

/* null counts, per nullable column */
enum { N_TS, N_KEY, N_VALUE, N_EPOCH, N_PID, N_HVALUE, N_NULLS };
static const char *const null_names[N_NULLS] = {
    "timestamp_nulls", "key_nulls", "value_nulls", "leader_epoch_nulls", "producer_id_nulls",
    "header_value_nulls",
};

#define N_LENT 3

typedef struct {
    PyObject_HEAD
    gbuf_t b[N_BUFS];
    /* the bytearrays the last N_LENT take()s handed out, older first: reused by a later
     * take() once nothing else refers to them (the caller dropped the arrays over them),
     * because fresh memory costs a page fault per 4 KiB on first touch, about as much as
     * decoding into it.  Three generations: a consumer looping over tables typically still
     * holds the previous one while the next is made, and the export's writer thread holds two
     * (the table it writes, and the previous one's rows left over for the next row group)
     * while the third is decoded (see cb_reset) */
    PyObject *lent[N_BUFS][N_LENT];
    int64_t rows;
    int64_t header_entries;
    int64_t nulls[N_NULLS];
    int64_t min_hour, max_hour; /* of the rows' timestamps (-1: none); rows > 0 */
    unsigned ts_types;          /* bit (timestamp type + 1) set for each type the rows have */
} ColumnBuffers;

/* what a failed append restores */
typedef struct {
    Py_ssize_t len[N_BUFS];
    int64_t rows, header_entries, nulls[N_NULLS], min_hour, max_hour;
    unsigned ts_types;
} mark_t;

static void
cb_mark(const ColumnBuffers *s, mark_t *m)
{
    for (int i = 0; i < N_BUFS; i++) {
        m->len[i] = s->b[i].len;
    }
    m->rows = s->rows;
    m->header_entries = s->header_entries;
    memcpy(m->nulls, s->nulls, sizeof m->nulls);
    m->min_hour = s->min_hour;
    m->max_hour = s->max_hour;
    m->ts_types = s->ts_types;
}

static void
cb_restore(ColumnBuffers *s, const mark_t *m)
{
    for (int i = 0; i < N_BUFS; i++) {
        s->b[i].len = m->len[i];
    }
    s->rows = m->rows;
    s->header_entries = m->header_entries;
    memcpy(s->nulls, m->nulls, sizeof s->nulls);
    s->min_hour = m->min_hour;
    s->max_hour = m->max_hour;
    s->ts_types = m->ts_types;
}

/* Empty buffers (offset buffers start with their leading 0): a lent bytearray nothing else
 * refers to any more (refcount 1: no memoryview, hence no buffer export, and no pyarrow buffer
 * over it is alive) is reused with its capacity, else a new one is made.  With `lend` the
 * current ones join the lent ones (take(); the oldest lent one is forgotten when all N_LENT
 * slots are taken: whoever still refers to it keeps it alive), else they are dropped. */
static int
cb_reset(ColumnBuffers *s, int lend)
{
    for (int i = 0; i < N_BUFS; i++) {
        gbuf_t *g = &s->b[i];
        PyObject **lent = s->lent[i];
        PyObject *reuse = NULL;
        /* the newest free one: the warmest in the caches (a consumer that drops each table at
         * once then alternates between two sets of buffers) */
        for (int k = N_LENT - 1; k >= 0 && reuse == NULL; k--) {
            if (lent[k] != NULL && Py_REFCNT(lent[k]) == 1) {
                reuse = lent[k]; /* our reference moves to g->ba below */
                lent[k] = NULL;
            }
        }
        int used = 0; /* close the gap, keeping the older ones first */
        for (int k = 0; k < N_LENT; k++) {
            if (lent[k] != NULL) {
                PyObject *o = lent[k];
                lent[k] = NULL;
                lent[used++] = o;
            }
        }
        if (lend && g->ba != NULL) {
            if (used == N_LENT) {
                Py_DECREF(lent[0]);
                memmove(lent, lent + 1, (N_LENT - 1) * sizeof lent[0]);
                used--;
            }
            lent[used] = g->ba; /* takes our reference */
            g->ba = NULL;
        }
        Py_CLEAR(g->ba);
        if (reuse != NULL) {
            g->ba = reuse;
            g->p = PyByteArray_AS_STRING(reuse);
            g->len = 0;
            g->cap = PyByteArray_GET_SIZE(reuse);
        }
        else if (gb_init(g) < 0) {
            return -1;
        }
    }
    static const int offset_bufs[] = {B_KEY_OFFSETS, B_VALUE_OFFSETS, B_HEADER_OFFSETS,
                                      B_HNAME_OFFSETS, B_HVALUE_OFFSETS};
    for (size_t i = 0; i < sizeof offset_bufs / sizeof offset_bufs[0]; i++) {
        int32_t zero = 0;
        if (gb_append(&s->b[offset_bufs[i]], &zero, 4) < 0) {
            return -1;
        }
    }
    s->rows = 0;
    s->header_entries = 0;
    memset(s->nulls, 0, sizeof s->nulls);
    s->min_hour = INT64_MAX;
    s->max_hour = INT64_MIN;
    s->ts_types = 0;
    return 0;
}

static int
cb_init(ColumnBuffers *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, ":ColumnBuffers", kwlist)) {
        return -1;
    }
    return cb_reset(self, 0);
}

static void
cb_dealloc(ColumnBuffers *self)
{
    for (int i = 0; i < N_BUFS; i++) {
        Py_CLEAR(self->b[i].ba);
        for (int k = 0; k < N_LENT; k++) {
            Py_CLEAR(self->lent[i][k]);
        }
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* ---- the decoder ----------------------------------------------------------------------- */

/* A zig-zag varint of at most 10 bytes whose value fits int64; 0 on success, -1 when it runs
 * past `end`, is longer, or is wider than 64 bits (the reference keeps those exactly; here
 * they are left to it). */
static inline int
varint(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pp, int64_t *out)
{
    Py_ssize_t p = *pp;
    uint64_t raw = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (p >= end) {
            return -1;
        }
        unsigned b = buf[p++];
        if (shift == 63 && (b & 0x7E)) {
            return -1; /* bits past 64: a "wide" value */
        }
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            break;
        }
        if (shift == 63) {
            return -1; /* longer than 10 bytes */
        }
    }
    *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
    *pp = p;
    return 0;
}

/* A zig-zag varint of at most 10 bytes as the reference reads it: up to 70 bits, so its value
 * may lie outside int64 (a delta; the sum with the batch's base may still fit). */
static inline int
varint_wide(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pp, __int128 *out)
{
    Py_ssize_t p = *pp;
    unsigned __int128 raw = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (p >= end) {
            return -1;
        }
        unsigned b = buf[p++];
        raw |= (unsigned __int128)(b & 0x7F) << shift;
        if (!(b & 0x80)) {
            break;
        }
        if (shift == 63) {
            return -1; /* longer than 10 bytes */
        }
    }
    *out = (__int128)(raw >> 1) ^ -(__int128)(raw & 1);
    *pp = p;
    return 0;
}

/* base + delta when it fits int64 (0), else -1 */
static inline int
add_wide(int64_t base, __int128 delta, int64_t *out)
{
    __int128 sum = (__int128)base + delta;
    if (sum < INT64_MIN || sum > INT64_MAX) {
        return -1;
    }
    *out = (int64_t)sum;
    return 0;
}

/* Skip a varint of at most 10 bytes, whatever its value (a timestampDelta under
 * LogAppendTime: the reference reads it, wide or not, and does not use it). */
static inline int
varint_skip(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pp)
{
    Py_ssize_t p = *pp;
    for (int i = 0; i < 10; i++) {
        if (p >= end) {
            return -1;
        }
        if (!(buf[p++] & 0x80)) {
            *pp = p;
            return 0;
        }
    }
    return -1;
}

/* A nullable blob: its start and length (-1: null); -1 when malformed (as the reference). */
static inline int
blob(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pp, Py_ssize_t *start, int64_t *len)
{
    int64_t n;
    if (varint(buf, end, pp, &n) < 0) {
        return -1;
    }
    if (n < 0) {
        if (n != -1) {
            return -1;
        }
        *len = -1;
        return 0;
    }
    if (n > (int64_t)(end - *pp)) {
        return -1;
    }
    *start = *pp;
    *len = n;
    *pp += (Py_ssize_t)n;
    return 0;
}

/* Whether s[0:n] is what Python's strict UTF-8 decoder accepts (no surrogates, no overlong
 * forms, nothing past U+10FFFF). */
static int
utf8_valid(const uint8_t *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int extra;
        uint8_t lo = 0x80, hi = 0xBF; /* the range of the second byte */
        if (c >= 0xC2 && c <= 0xDF) {
            extra = 1;
        }
        else if (c >= 0xE0 && c <= 0xEF) {
            extra = 2;
            if (c == 0xE0) {
                lo = 0xA0;
            }
            else if (c == 0xED) {
                hi = 0x9F;
            }
        }
        else if (c >= 0xF0 && c <= 0xF4) {
            extra = 3;
            if (c == 0xF0) {
                lo = 0x90;
            }
            else if (c == 0xF4) {
                hi = 0x8F;
            }
        }
        else {
            return 0;
        }
        if (n - i <= extra) {
            return 0;
        }
        if (s[i + 1] < lo || s[i + 1] > hi) {
            return 0;
        }
        for (int k = 2; k <= extra; k++) {
            if ((s[i + k] & 0xC0) != 0x80) {
                return 0;
            }
        }
        i += extra + 1;
    }
    return 1;
}

#define I32_LIMIT ((int64_t)INT32_MAX)

/* Append one binary value (start/len from blob()) to a validity/offsets/data triple; -2 when
 * its data would pass 2^31 - 1 bytes, -1 on MemoryError. */
static inline int
put_binary(ColumnBuffers *s, int valid_i, int offsets_i, int data_i, int null_i, int64_t row,
           const uint8_t *buf, Py_ssize_t start, int64_t len)
{
    gbuf_t *data = &s->b[data_i];
    if (len > 0) {
        if ((int64_t)data->len + len > I32_LIMIT) {
            return -2;
        }
        if (gb_append(data, buf + start, (Py_ssize_t)len) < 0) {
            return -1;
        }
    }
    if (gb_reserve(&s->b[offsets_i], 4) < 0 || gb_reserve(&s->b[valid_i], 1) < 0) {
        return -1;
    }
    PUT_I32(&s->b[offsets_i], (int32_t)data->len);
    bm_set(&s->b[valid_i], row, len >= 0);
    if (len < 0) {
        s->nulls[null_i]++;
    }
    return 0;
}

/* Decode `count` records; 1 appended, 0 rejected, -2 full, -1 error set (all but 1 leave the
 * caller to restore the mark). */
static int
decode_into(ColumnBuffers *s, const uint8_t *buf, Py_ssize_t end, int64_t count,
            int64_t base_offset, int64_t first_ts, int has_append_ts, int64_t append_ts,
            int ts_type, int64_t epoch, int64_t pid)
{
    /* the smallest record takes 7 bytes: a count the data cannot hold is rejected up front,
     * which also bounds the reservations below */
    if (count < 0 || count > (int64_t)(end / 7)) {
        return 0;
    }
    const int64_t n0 = s->rows;
    if (count > 0) {
        s->ts_types |= 1u << (ts_type + 1);
    }
    if (gb_reserve(&s->b[B_OFFSET], (Py_ssize_t)count * 8) < 0
        || gb_reserve(&s->b[B_TS], (Py_ssize_t)count * 8) < 0
        || gb_reserve(&s->b[B_TS_TYPE], (Py_ssize_t)count) < 0
        || gb_reserve(&s->b[B_EPOCH], (Py_ssize_t)count * 4) < 0
        || gb_reserve(&s->b[B_PID], (Py_ssize_t)count * 8) < 0
        || gb_reserve(&s->b[B_HEADER_OFFSETS], (Py_ssize_t)count * 4) < 0) {
        return -1;
    }
    static const int bitmaps[] = {B_TS_VALID, B_EPOCH_VALID, B_PID_VALID};
    for (size_t i = 0; i < 3; i++) {
        if (gb_reserve(&s->b[bitmaps[i]], (Py_ssize_t)(count / 8 + 2)) < 0) {
            return -1;
        }
    }
    Py_ssize_t pos = 0;
    /* the extremes of the batch's non-null timestamps (INT64_MAX / -1: none yet) */
    int64_t min_ts = INT64_MAX, max_ts = -1;
    const int64_t nulls_ts0 = s->nulls[N_TS];
    /* the previous header name, checked as UTF-8 once */
    const uint8_t *prev_name = NULL;
    int64_t prev_name_len = -1;
    for (int64_t i = 0; i < count; i++) {
        const int64_t row = n0 + i;
        int64_t length, klen, vlen, nh;
        __int128 ts_delta = 0, offset_delta;
        Py_ssize_t kstart = 0, vstart = 0;
        if (varint(buf, end, &pos, &length) < 0 || length < 0 || length > (int64_t)(end - pos)) {
            return 0;
        }
        const Py_ssize_t body_end = pos + (Py_ssize_t)length;
        pos += 1; /* attributes (unused) */
        if ((has_append_ts ? varint_skip(buf, end, &pos) : varint_wide(buf, end, &pos, &ts_delta))
                < 0
            || varint_wide(buf, end, &pos, &offset_delta) < 0
            || blob(buf, end, &pos, &kstart, &klen) < 0 || blob(buf, end, &pos, &vstart, &vlen) < 0
            || varint(buf, end, &pos, &nh) < 0 || nh < 0) {
            return 0;
        }
        int rc;
        if ((rc = put_binary(s, B_KEY_VALID, B_KEY_OFFSETS, B_KEY_DATA, N_KEY, row, buf, kstart,
                             klen))
                < 0
            || (rc = put_binary(s, B_VALUE_VALID, B_VALUE_OFFSETS, B_VALUE_DATA, N_VALUE, row, buf,
                                vstart, vlen))
                   < 0) {
            return rc;
        }
        for (int64_t h = 0; h < nh; h++) {
            Py_ssize_t hks = 0, hvs = 0;
            int64_t hkl, hvl;
            if (blob(buf, end, &pos, &hks, &hkl) < 0 || hkl < 0
                || blob(buf, end, &pos, &hvs, &hvl) < 0) {
                return 0;
            }
            if (!(hkl == prev_name_len && memcmp(buf + hks, prev_name, (size_t)hkl) == 0)) {
                if (!utf8_valid(buf + hks, (Py_ssize_t)hkl)) {
                    return 0;
                }
                prev_name = buf + hks;
                prev_name_len = hkl;
            }
            if (s->header_entries + 1 > I32_LIMIT) {
                return -2;
            }
            gbuf_t *nd = &s->b[B_HNAME_DATA];
            if ((int64_t)nd->len + hkl > I32_LIMIT) {
                return -2;
            }
            if (gb_append(nd, buf + hks, (Py_ssize_t)hkl) < 0
                || gb_reserve(&s->b[B_HNAME_OFFSETS], 4) < 0) {
                return -1;
            }
            PUT_I32(&s->b[B_HNAME_OFFSETS], (int32_t)nd->len);
            if ((rc = put_binary(s, B_HVALUE_VALID, B_HVALUE_OFFSETS, B_HVALUE_DATA, N_HVALUE,
                                 s->header_entries, buf, hvs, hvl))
                < 0) {
                return rc;
            }
            s->header_entries++;
        }
        if (pos != body_end) {
            return 0;
        }
        int64_t offset, ts;
        if (add_wide(base_offset, offset_delta, &offset) < 0) {
            return 0;
        }
        if (has_append_ts) {
            ts = append_ts;
        }
        else {
            /* any negative timestamp is null (no timestamp), even one below int64 */
            __int128 wide_ts = (__int128)first_ts + ts_delta;
            if (wide_ts > INT64_MAX) {
                return 0;
            }
            ts = wide_ts < 0 ? -1 : (int64_t)wide_ts;
        }
        PUT_I64(&s->b[B_OFFSET], offset);
        PUT_I64(&s->b[B_TS], ts < 0 ? 0 : ts);
        bm_set(&s->b[B_TS_VALID], row, ts >= 0);
        /* the hours are taken from the extremes once per batch (ts / 3600000 is monotone):
         * a division per row cost about a tenth of the loop */
        if (ts < 0) {
            s->nulls[N_TS]++;
        }
        else {
            min_ts = ts < min_ts ? ts : min_ts;
            max_ts = ts > max_ts ? ts : max_ts;
        }
        PUT_I32(&s->b[B_HEADER_OFFSETS], (int32_t)s->header_entries);
        s->rows = row + 1;
    }
    if (pos != end) {
        return 0;
    }
    /* what the batch gives every row, filled once (the caller restores the mark on failure) */
    if (count > 0) {
        const int64_t null_ts = s->nulls[N_TS] - nulls_ts0;
        const int64_t lo = null_ts ? -1 : min_ts / 3600000;
        const int64_t hi = max_ts >= 0 ? max_ts / 3600000 : -1;
        s->min_hour = lo < s->min_hour ? lo : s->min_hour;
        s->max_hour = hi > s->max_hour ? hi : s->max_hour;
    }
    memset(s->b[B_TS_TYPE].p + s->b[B_TS_TYPE].len, ts_type + 1, (size_t)count);
    s->b[B_TS_TYPE].len += (Py_ssize_t)count;
    const int32_t epoch32 = epoch < 0 ? 0 : (int32_t)epoch;
    const int64_t pid64 = pid < 0 ? 0 : pid;
    for (int64_t i = 0; i < count; i++) {
        PUT_I32(&s->b[B_EPOCH], epoch32);
        PUT_I64(&s->b[B_PID], pid64);
    }
    bm_fill(&s->b[B_EPOCH_VALID], n0, count, epoch >= 0);
    bm_fill(&s->b[B_PID_VALID], n0, count, pid >= 0);
    s->nulls[N_EPOCH] += epoch < 0 ? count : 0;
    s->nulls[N_PID] += pid < 0 ? count : 0;
    return 1;
}

PyDoc_STRVAR(append_v2_doc,
"append_v2(data, count, base_offset, first_timestamp, log_append_ts, timestamp_type,\n"
"          leader_epoch, producer_id) -> int\n"
"\n"
"Append the `count` records of a magic-2 records section `data` (decompressed): 1 when\n"
"appended; 0 when the bytes are not what the reference decoder accepts, or hold values\n"
"int64 cannot (nothing appended: decode the batch the reference way); -1 when an int32\n"
"offset would overflow (nothing appended: take() the buffers and append again).\n"
"`log_append_ts` is None or the LogAppendTime every record takes; timestamp_type is -1, 0, 1.");

static PyObject *
cb_append_v2(ColumnBuffers *self, PyObject *args)
{
    Py_buffer view;
    long long count, base_offset, first_ts, epoch, pid;
    PyObject *append_ts_obj;
    int ts_type;
    if (!PyArg_ParseTuple(args, "y*LLLOiLL:append_v2", &view, &count, &base_offset, &first_ts,
                          &append_ts_obj, &ts_type, &epoch, &pid)) {
        return NULL;
    }
    long long append_ts = 0;
    int has_append_ts = append_ts_obj != Py_None;
    if (has_append_ts) {
        append_ts = PyLong_AsLongLong(append_ts_obj);
        if (append_ts == -1 && PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    if (ts_type < -1 || ts_type > 1 || epoch > INT32_MAX) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "append_v2: timestamp_type or leader_epoch out of range");
        return NULL;
    }
    mark_t mark;
    cb_mark(self, &mark);
    int rc = decode_into(self, (const uint8_t *)view.buf, view.len, count, base_offset, first_ts,
                         has_append_ts, append_ts, ts_type, epoch, pid);
    PyBuffer_Release(&view);
    if (rc != 1) {
        cb_restore(self, &mark);
    }
    if (rc == -1) {
        return NULL;
    }
    return PyLong_FromLong(rc == 1 ? 1 : rc == 0 ? 0 : -1);
}

PyDoc_STRVAR(take_doc,
"take() -> dict\n"
"\n"
"The buffers by name as memoryviews of their used bytes (over the object's bytearrays: no\n"
"copy), the null counts ('<column>_nulls'), 'rows', 'header_entries' and 'timestamp_types'\n"
"(bit t + 1 set when a row has timestamp type t); the object then\n"
"starts again empty.  The memory is the caller's for as long as it refers to it (through the\n"
"memoryviews or anything made from them); a later take() reuses it only once nothing does.");

static PyObject *
cb_take(ColumnBuffers *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyDict_New();
    if (out == NULL) {
        return NULL;
    }
    for (int i = 0; i < N_BUFS; i++) {
        gbuf_t *g = &self->b[i];
        PyObject *whole = PyMemoryView_FromObject(g->ba);
        PyObject *used = whole == NULL ? NULL : PySequence_GetSlice(whole, 0, g->len);
        Py_XDECREF(whole);
        if (used == NULL || PyDict_SetItemString(out, buf_names[i], used) < 0) {
            Py_XDECREF(used);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(used);
    }
    for (int i = 0; i < N_NULLS; i++) {
        PyObject *v = PyLong_FromLongLong(self->nulls[i]);
        if (v == NULL || PyDict_SetItemString(out, null_names[i], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(v);
    }
    PyObject *types = PyLong_FromUnsignedLong(self->ts_types);
    if (types == NULL || PyDict_SetItemString(out, "timestamp_types", types) < 0) {
        Py_XDECREF(types);
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(types);
    PyObject *rows = PyLong_FromLongLong(self->rows);
    PyObject *entries = PyLong_FromLongLong(self->header_entries);
    if (rows == NULL || entries == NULL || PyDict_SetItemString(out, "rows", rows) < 0
        || PyDict_SetItemString(out, "header_entries", entries) < 0) {
        Py_XDECREF(rows);
        Py_XDECREF(entries);
        Py_DECREF(out);
        return NULL;
    }
    Py_DECREF(rows);
    Py_DECREF(entries);
    if (cb_reset(self, 1) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyObject *
cb_get_rows(ColumnBuffers *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLongLong(self->rows);
}

static PyObject *
cb_get_nbytes(ColumnBuffers *self, void *Py_UNUSED(closure))
{
    Py_ssize_t n = 0;
    for (int i = 0; i < N_BUFS; i++) {
        n += self->b[i].len;
    }
    return PyLong_FromSsize_t(n);
}

static PyObject *
cb_get_hours(ColumnBuffers *self, void *Py_UNUSED(closure))
{
    if (self->rows == 0) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(LL)", (long long)self->min_hour, (long long)self->max_hour);
}

static PyMethodDef cb_methods[] = {
    {"append_v2", (PyCFunction)cb_append_v2, METH_VARARGS, append_v2_doc},
    {"take", (PyCFunction)cb_take, METH_NOARGS, take_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef cb_getset[] = {
    {"rows", (getter)cb_get_rows, NULL, "records held", NULL},
    {"nbytes", (getter)cb_get_nbytes, NULL, "bytes used by all buffers", NULL},
    {"hours", (getter)cb_get_hours, NULL,
     "(min, max) of timestamp // 3600000 over the rows (-1: no timestamp), None when empty",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ColumnBuffers_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "segment_lib._columns.ColumnBuffers",
    .tp_basicsize = sizeof(ColumnBuffers),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Growable column buffers in Arrow's layout that magic-2 records are decoded into.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)cb_init,
    .tp_dealloc = (destructor)cb_dealloc,
    .tp_methods = cb_methods,
    .tp_getset = cb_getset,
};

/* ==== module ============================================================================ */

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "segment_lib._columns",
    "Magic-2 records decoded into Arrow-layout column buffers (optional; see _columns.c).",
    -1,
    NULL,
};

PyMODINIT_FUNC
PyInit__columns(void)
{
    const uint16_t probe = 1;
    if (*(const uint8_t *)&probe != 1) {
        PyErr_SetString(PyExc_ImportError, "segment_lib._columns: big-endian hosts unsupported");
        return NULL;
    }
    if (PyType_Ready(&ColumnBuffers_Type) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    Py_INCREF(&ColumnBuffers_Type);
    if (PyModule_AddObject(m, "ColumnBuffers", (PyObject *)&ColumnBuffers_Type) < 0) {
        Py_DECREF(&ColumnBuffers_Type);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
