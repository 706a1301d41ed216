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
 * (PCLMULQDQ), reduced by the crc32 instruction (see _crc32c.h); the constant is built
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

#include "_batch_v2.h" /* the magic-2 header layout, readers and checks (shared with _speedups) */
/* the CRC-32C (shared with _speedups): the kernels, the combine, crc32c(), which here refuses
 * a `value` beyond 32 bits */
#define CRC32C_REFUSE_WIDE_VALUE 1
#include "_crc32c.h"

/* ==== the walk ============================================================================ */

/* The header layout and readers: _batch_v2.h (checked against segment_lib.record_batch at
 * first use). */
#define N_CODECS 5 /* NONE, GZIP, SNAPPY, LZ4, ZSTD: len(record_batch._CODECS) */
#define NO_EPOCH (-((int64_t)1 << 40))
#define N_STATE 18
#define RELEASE_GIL_BYTES 32768
#define HIST_SLOTS 16

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
    v2_reason_t reason;
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
    k_cache_t kc = K_CACHE_EMPTY;
    int64_t hist[HIST_SLOTS][3];
    int hist_used = 0;
    v2_reason_t reason = V2_END;
    Py_ssize_t pos = w->start;
    const Py_ssize_t end = w->end;
    while (pos < end) {
        const uint8_t *p = b + pos;
        size_t size;
        reason = v2_check_header(p, (int64_t)(end - pos), N_CODECS, &size);
        if (reason != V2_END) {
            break;
        }
        const int16_t attributes = be_i16(p + OFF_ATTRIBUTES);
        const int32_t record_count = be_i32(p + OFF_RECORD_COUNT);
        const int32_t delta = be_i32(p + OFF_LAST_OFFSET_DELTA);
        const int64_t base_offset = be_i64(p + OFF_BASE_OFFSET);
        int64_t last;
        if (__builtin_add_overflow(base_offset, (int64_t)delta, &last)) {
            reason = V2_WIDE;
            break;
        }
        const size_t body = size - V2_CRC_START;
        if (w->verify_crc) {
            uint32_t head_reg = 0;
            if (w->want_crc) {
                head_reg = raw(reg, p, V2_CRC_START);
            }
            const uint32_t body_reg = raw(0xFFFFFFFFu, p + V2_CRC_START, body);
            if (~body_reg != be_u32(p + OFF_CRC)) {
                reason = V2_CRC;
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

static int
check_constants(void)
{
    if (checked_constants) {
        return 0;
    }
    PyObject *records, *record_batch;
    if (v2_import_checked(&records, &record_batch, "segment_lib._summary") < 0) {
        return -1;
    }
    PyObject *codecs = PyObject_GetAttrString(record_batch, "_CODECS");
    Py_DECREF(records);
    Py_DECREF(record_batch);
    Py_ssize_t n = codecs ? PyObject_Length(codecs) : -1;
    Py_XDECREF(codecs);
    if (n != N_CODECS) {
        if (!PyErr_Occurred()) {
            PyErr_Format(PyExc_ImportError,
                         "segment_lib._summary: %zd codecs in Python, %d in C", n, N_CODECS);
        }
        return -1;
    }
    checked_constants = 1;
    return 0;
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
    PyObject *state = NULL, *crc_out = NULL;
    if (hist == NULL || (state = PyTuple_New(N_STATE)) == NULL) {
        goto fail;
    }
    for (Py_ssize_t i = 0; i < N_STATE; i++) {
        PyObject *v = PyLong_FromLongLong(fields[i]);
        if (v == NULL) {
            goto fail;
        }
        PyTuple_SET_ITEM(state, i, v);
    }
    if (!w.want_crc) {
        crc_out = Py_NewRef(Py_None);
    }
    else if ((crc_out = PyLong_FromUnsignedLong(~w.reg)) == NULL) {
        goto fail;
    }
    return Py_BuildValue("(nONNNNN)", w.stop, v2_reason_objects[w.reason], crc_out, state,
                         intervals, runs, hist);

fail: /* one exit for every failed allocation: what was made is released */
    Py_XDECREF(state);
    Py_XDECREF(intervals);
    Py_XDECREF(runs);
    Py_XDECREF(hist);
    return NULL;
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
        k_cache_t kc = K_CACHE_EMPTY;
        shifted = crc_shift(v, n, &kc);
    }
    return PyLong_FromUnsignedLong(~(~(uint32_t)bcrc ^ shifted));
}

static PyMethodDef methods[] = {
    {"summarize_v2", (PyCFunction)summarize_v2, METH_VARARGS, summarize_v2_doc},
    CRC32C_METHOD_DEF,
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
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) {
        return NULL;
    }
    PyObject *initial = NULL;
    /* INITIAL_STATE last: PyModule_AddObject takes the reference only when it succeeds */
    if (crc_module_init(m) < 0 || v2_intern_reasons() < 0
        || PyModule_AddIntConstant(m, "NO_EPOCH", (long)NO_EPOCH) < 0
        || (initial = Py_BuildValue("(LLLLLLLLLLLLLLLLLL)", (long long)-1, (long long)-1,
                                    (long long)-1, 0LL, 0LL, 0LL, 0LL, 0LL, (long long)-1,
                                    (long long)-1, (long long)NO_EPOCH, (long long)-1, 0LL, 0LL,
                                    0LL, (long long)-1, (long long)-1, 0LL))
               == NULL
        || PyModule_AddObject(m, "INITIAL_STATE", initial) < 0) {
        Py_XDECREF(initial);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
