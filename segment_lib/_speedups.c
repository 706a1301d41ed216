/*
 * segment_lib._speedups: the compiled hot loops of segment_lib.
 *
 *   decode_records_v2  the magic-2 record decoder (this header comment, then the decoder);
 *   emit_records_v2    the same loop handing each record to a callable as call arguments
 *                      instead of building Record objects (the replay's produce path: no
 *                      per-record tuples, no Python loop; specification
 *                      segment_lib.record_batch._emit_records_python, tests/test_emit_records.py);
 *   scan_batches_v2    the magic-2 batch-header scan with CRC-32C verification, which
 *                      segment_lib.log_file.iter_batches uses for runs of magic-2 batches (its
 *                      contract is at "the batch scan" below);
 *   crc32c             the CRC-32C the scan uses, exposed for tests and benchmarks (the code
 *                      is shared with segment_lib._summary: _crc32c.h says why it is
 *                      hand-written and how it is made fast).
 *
 * Each has a specification outside this file that is also what runs when the extension is not
 * built: the Python decoder and the Python loop of iter_batches, and for the checksum the
 * `crc32c` package.  Tests compare them (tests/test_speedups.py, tests/test_scan_speedups.py).
 *
 * Contract: decode_records_v2(data, count, base_offset, first_timestamp, log_append_ts)
 * returns exactly what segment_lib.record_batch._decode_records_python returns for the same
 * arguments, and raises the same exception (segment_lib.errors.CorruptRecordError with the same
 * detail, position and expected) for the same bad bytes.  tests/test_speedups.py checks this
 * with property tests; the Python function is the specification, this file only makes it fast.
 *
 * Why C: decoding one record is a handful of varints and two byte-string copies; in Python the
 * interpreter overhead per field dominates, and no maintained library decodes Kafka records into
 * our Record/Header model (aiokafka's Cython decoder builds its own record objects).
 *
 * Semantics mirrored from the Python reference, including its corner cases:
 *   - every varint may take up to 10 bytes (also the 32-bit ones); the 10th byte may carry 7
 *     payload bits, so a decoded value may exceed the int64 range.  Such "wide" values are kept
 *     exactly (as raw low 64 bits + high bits) and turned into Python ints when needed, so error
 *     messages and arithmetic match Python's unbounded ints;
 *   - the attributes byte is skipped without a bounds check (the next varint then fails at a
 *     position one past the end, as in Python);
 *   - key/value/header lengths are checked against the end of *all* the records, not of the
 *     current record; the record-length mismatch is detected after the fields are read;
 *   - a header key that is not UTF-8 is reported after its value has been read;
 *   - base_offset/first_timestamp/count may be any Python ints (or other objects: arithmetic
 *     then goes through the generic number protocol exactly as Python's "+" would);
 *   - data that does not export a contiguous buffer is copied with bytes(data), as Python does.
 *
 * Record and Header are typing.NamedTuple classes (tuple subclasses with __slots__ = ()):
 * instances are allocated with type->tp_alloc and filled with PyTuple_SET_ITEM, which is what
 * tuple.__new__ does, minus the argument parsing.  The types and the exception class are looked
 * up lazily on first call (importing them at module init could recurse into segment_lib's own
 * import of this module).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_batch_v2.h" /* the magic-2 header layout, readers and checks (shared with _summary) */
#include "_crc32c.h"   /* the CRC-32C (shared with _summary) */

/* ---- lazily imported Python objects ---------------------------------------------------- */

static PyTypeObject *Record_type = NULL;      /* segment_lib.records.Record */
static PyTypeObject *Header_type = NULL;      /* segment_lib.records.Header */
static PyObject *CorruptRecordError = NULL;   /* segment_lib.errors.CorruptRecordError */

/* Check that a NamedTuple class has a plain tuple layout with `nfields` fields, so that
 * tp_alloc(type, n) + PyTuple_SET_ITEM builds a valid instance. */
static int
check_tuple_type(PyObject *obj, const char *name, Py_ssize_t nfields)
{
    if (!PyType_Check(obj) || !PyType_IsSubtype((PyTypeObject *)obj, &PyTuple_Type)) {
        PyErr_Format(PyExc_TypeError, "segment_lib.records.%s is not a tuple subclass", name);
        return -1;
    }
    PyTypeObject *t = (PyTypeObject *)obj;
    if (t->tp_basicsize != PyTuple_Type.tp_basicsize || t->tp_itemsize != PyTuple_Type.tp_itemsize
        || t->tp_dictoffset != 0) {
        PyErr_Format(PyExc_TypeError,
                     "segment_lib.records.%s adds instance fields to tuple (needs __slots__ = ())",
                     name);
        return -1;
    }
    PyObject *fields = PyObject_GetAttrString(obj, "_fields");
    if (fields == NULL) {
        return -1;
    }
    Py_ssize_t n = PyObject_Length(fields);
    Py_DECREF(fields);
    if (n < 0) {
        return -1;
    }
    if (n != nfields) {
        PyErr_Format(PyExc_TypeError, "segment_lib.records.%s has %zd fields, expected %zd", name,
                     n, nfields);
        return -1;
    }
    return 0;
}

static int
ensure_imports(void)
{
    if (Record_type != NULL) {
        return 0;
    }
    PyObject *records = PyImport_ImportModule("segment_lib.records");
    if (records == NULL) {
        return -1;
    }
    PyObject *record = PyObject_GetAttrString(records, "Record");
    PyObject *header = PyObject_GetAttrString(records, "Header");
    Py_DECREF(records);
    PyObject *errors = NULL, *exc = NULL;
    if (record == NULL || header == NULL) {
        goto fail;
    }
    if (check_tuple_type(record, "Record", 5) < 0 || check_tuple_type(header, "Header", 2) < 0) {
        goto fail;
    }
    errors = PyImport_ImportModule("segment_lib.errors");
    if (errors == NULL) {
        goto fail;
    }
    exc = PyObject_GetAttrString(errors, "CorruptRecordError");
    Py_DECREF(errors);
    if (exc == NULL) {
        goto fail;
    }
    /* the three stay referenced for the life of the process (module globals) */
    CorruptRecordError = exc;
    Header_type = (PyTypeObject *)header;
    Record_type = (PyTypeObject *)record;
    return 0;
fail:
    Py_XDECREF(record);
    Py_XDECREF(header);
    return -1;
}

/* ---- errors ---------------------------------------------------------------------------- */

/* Raise CorruptRecordError(detail, position=position, expected=expected); steals `detail` and
 * `expected` (either may be NULL if building it failed, in which case that error propagates). */
static void
raise_corrupt(PyObject *detail, Py_ssize_t position, PyObject *expected)
{
    PyObject *args = NULL, *kwargs = NULL, *pos = NULL, *exc = NULL;
    if (detail == NULL || expected == NULL) {
        goto done;
    }
    args = PyTuple_Pack(1, detail);
    kwargs = PyDict_New();
    pos = PyLong_FromSsize_t(position);
    if (args == NULL || kwargs == NULL || pos == NULL
        || PyDict_SetItemString(kwargs, "position", pos) < 0
        || PyDict_SetItemString(kwargs, "expected", expected) < 0) {
        goto done;
    }
    exc = PyObject_Call(CorruptRecordError, args, kwargs);
    if (exc != NULL) {
        PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    }
done:
    Py_XDECREF(detail);
    Py_XDECREF(expected);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    Py_XDECREF(pos);
    Py_XDECREF(exc);
}

/* ---- varints --------------------------------------------------------------------------- */

/* A decoded zig-zag varint.  The raw (un-zig-zagged) value has up to 70 bits: `lo` holds bits
 * 0-63 and `hi` bits 64-69.  When hi == 0 the value fits in int64 and is in `v`; otherwise
 * ("wide") it is >= 2**63 (lo even) or <= -2**63 - 1 (lo odd) and only varint_pylong() gives
 * it exactly. */
typedef struct {
    int64_t v;
    uint64_t lo;
    unsigned int hi;
} varint_t;

#define VARINT_WIDE(x) ((x).hi != 0)
#define VARINT_NEGATIVE(x) (VARINT_WIDE(x) ? (int)((x).lo & 1) : (x).v < 0)

/* The exact value of a varint as a Python int (new reference). */
static PyObject *
varint_pylong(const varint_t *x)
{
    if (!VARINT_WIDE(*x)) {
        return PyLong_FromLongLong(x->v);
    }
    /* magnitude m = raw >> 1 = (hi << 63) | (lo >> 1); value = m if raw even, else ~m */
    PyObject *hi = PyLong_FromUnsignedLong(x->hi);
    PyObject *sixty_three = PyLong_FromLong(63);
    PyObject *lo = PyLong_FromUnsignedLongLong(x->lo >> 1);
    PyObject *shifted = NULL, *m = NULL, *result = NULL;
    if (hi == NULL || sixty_three == NULL || lo == NULL) {
        goto done;
    }
    shifted = PyNumber_Lshift(hi, sixty_three);
    if (shifted == NULL) {
        goto done;
    }
    m = PyNumber_Or(shifted, lo);
    if (m == NULL) {
        goto done;
    }
    if (x->lo & 1) {
        result = PyNumber_Invert(m);
    }
    else {
        result = m;
        Py_INCREF(result);
    }
done:
    Py_XDECREF(hi);
    Py_XDECREF(sixty_three);
    Py_XDECREF(lo);
    Py_XDECREF(shifted);
    Py_XDECREF(m);
    return result;
}

/* Decode the varint at *pp (which may be past `end`); on success advance *pp and return 0,
 * else raise CorruptRecordError at the varint's start and return -1. */
static int
read_varint_slow(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pp, varint_t *out,
                 const char *what)
{
    Py_ssize_t start = *pp, p = *pp;
    uint64_t lo = 0;
    unsigned int hi = 0;
    unsigned int shift = 0;
    for (;;) {
        if (p >= end) {
            raise_corrupt(
                PyUnicode_FromFormat("varint %s runs past the end of the records", what),
                start, PyUnicode_FromString("a complete varint"));
            return -1;
        }
        unsigned int b = buf[p++];
        lo |= (uint64_t)(b & 0x7F) << shift; /* at shift 63 only bit 0 lands in `lo` */
        if (shift == 63) {
            hi = (b & 0x7F) >> 1;
        }
        if (!(b & 0x80)) {
            break;
        }
        shift += 7;
        if (shift > 63) {
            raise_corrupt(PyUnicode_FromFormat("varint %s is longer than 10 bytes", what), start,
                          PyUnicode_FromString("a varint of at most 10 bytes"));
            return -1;
        }
    }
    out->lo = lo;
    out->hi = hi;
    out->v = (int64_t)((lo >> 1) ^ (~(lo & 1) + 1)); /* zig-zag; meaningful when hi == 0 */
    *pp = p;
    return 0;
}

static inline int
read_varint(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pp, varint_t *out, const char *what)
{
    Py_ssize_t p = *pp;
    /* 1- and 2-byte fast paths: most lengths and deltas are below 64 or 8192 (a record of a
     * few hundred bytes has a 2-byte length and value length) */
    if (p < end && buf[p] < 0x80) {
        unsigned int b = buf[p];
        out->lo = b;
        out->hi = 0;
        out->v = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        *pp = p + 1;
        return 0;
    }
    if (p + 1 < end && buf[p + 1] < 0x80) {
        unsigned int raw = (buf[p] & 0x7Fu) | ((unsigned int)buf[p + 1] << 7);
        out->lo = raw;
        out->hi = 0;
        out->v = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
        *pp = p + 2;
        return 0;
    }
    return read_varint_slow(buf, end, pp, out, what);
}

/* Read a nullable byte string (length varint + bytes) at *pp without copying it: on success
 * store where it starts and its length (-1 for null) and advance *pp past it, return 0; else
 * raise and return -1.  `what` names the field in errors, `what_length` its length varint. */
static int
read_blob(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pp, const char *what,
          const char *what_length, Py_ssize_t *blob_start, Py_ssize_t *blob_len)
{
    varint_t n;
    if (read_varint(buf, end, pp, &n, what_length) < 0) {
        return -1;
    }
    Py_ssize_t p = *pp;
    if (VARINT_NEGATIVE(n)) {
        if (VARINT_WIDE(n) || n.v != -1) {
            PyObject *nobj = varint_pylong(&n);
            if (nobj == NULL) {
                return -1;
            }
            raise_corrupt(PyUnicode_FromFormat("%s length %S", what, nobj), p,
                          PyUnicode_FromString("-1 (null) or a length >= 0"));
            Py_DECREF(nobj);
            return -1;
        }
        *blob_len = -1;
        return 0;
    }
    /* Python: p + n > end; written as n > end - p so that it cannot overflow */
    if (VARINT_WIDE(n) || n.v > (int64_t)(end - p)) {
        PyObject *nobj = varint_pylong(&n);
        if (nobj == NULL) {
            return -1;
        }
        raise_corrupt(PyUnicode_FromFormat("%s of %S bytes runs past the end of the records",
                                           what, nobj),
                      p, PyUnicode_FromFormat("at most %zd bytes", end - p));
        Py_DECREF(nobj);
        return -1;
    }
    *blob_start = p;
    *blob_len = (Py_ssize_t)n.v;
    *pp = p + (Py_ssize_t)n.v;
    return 0;
}

/* A blob as bytes, or None for a null blob (new reference). */
static inline PyObject *
blob_object(const uint8_t *buf, Py_ssize_t start, Py_ssize_t len)
{
    if (len < 0) {
        Py_RETURN_NONE;
    }
    return PyBytes_FromStringAndSize((const char *)buf + start, len);
}

/* ---- arithmetic ------------------------------------------------------------------------ */

/* An int argument seen both as an object and, when it is an int in int64 range, as a C value. */
typedef struct {
    PyObject *obj;
    int fast; /* obj is an int and `v` is its value */
    int64_t v;
} intarg_t;

static int
intarg_init(intarg_t *a, PyObject *obj)
{
    a->obj = obj;
    a->fast = 0;
    a->v = 0;
    if (PyLong_Check(obj)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(obj, &overflow);
        if (v == -1 && PyErr_Occurred()) {
            return -1;
        }
        if (!overflow) {
            a->fast = 1;
            a->v = (int64_t)v;
        }
    }
    return 0;
}

/* base + delta, exactly as Python's "+" computes it (new reference). */
static PyObject *
add_delta(const intarg_t *base, const varint_t *delta)
{
    if (base->fast && !VARINT_WIDE(*delta)) {
        int64_t b = base->v, d = delta->v;
        if (!((d > 0 && b > INT64_MAX - d) || (d < 0 && b < INT64_MIN - d))) {
            return PyLong_FromLongLong(b + d);
        }
    }
    PyObject *d = varint_pylong(delta);
    if (d == NULL) {
        return NULL;
    }
    PyObject *sum = PyNumber_Add(base->obj, d);
    Py_DECREF(d);
    return sum;
}

/* ---- the decoder ----------------------------------------------------------------------- */

/* Smallest encoding of a record: length, attributes, timestampDelta, offsetDelta, key length,
 * value length, header count: one byte each.  n records therefore need >= 7n bytes, which bounds
 * how much we preallocate for a corrupt (huge) recordCount. */
#define MIN_RECORD_BYTES 7
/* Smallest header: key length + value length. */
#define MIN_HEADER_BYTES 2

/* Most call arguments emit_records_v2 accepts (the call's template). */
#define EMIT_MAX_ARGS 16

/* "Emit" mode of the record loop (emit_records_v2): instead of building Record objects, call
 * `fn` once per record with the template's arguments, the record's fields put in their slots.
 * In this mode the offset is not materialised, header lists are lists of plain (str, bytes)
 * tuples (None when a record has none) and records before `start` are parsed but not emitted.
 * An exception raised by `fn` stops the loop; it is kept in `error` (with `emitted`, the number
 * of records fn accepted) instead of being raised, so the caller can resume at that record. */
typedef struct {
    PyObject *fn;
    PyObject *stack[1 + EMIT_MAX_ARGS]; /* stack[0] free for PY_VECTORCALL_ARGUMENTS_OFFSET */
    Py_ssize_t nargs;
    Py_ssize_t value_slot, key_slot, timestamp_slot, headers_slot, mark_slot; /* mark: -1 none */
    PyObject *mark_first, *mark_last, *mark_only;  /* the mark slot of the first/last/lone record */
    PyObject *zero;      /* the timestamp passed when zero_timestamps (else NULL) */
    int64_t start;
    int64_t emitted;     /* out: index of the first record not emitted */
    PyObject *error;     /* out: what fn raised (new reference), or NULL */
} emit_t;

/* One header name as str, reusing the previous one when the bytes are the same (the records of
 * a batch usually share their header names: this saves a UTF-8 decode and an allocation). */
typedef struct {
    const uint8_t *bytes;
    Py_ssize_t len;
    PyObject *str; /* owned, or NULL */
} name_cache_t;

static PyObject *
cached_name(name_cache_t *c, const uint8_t *bytes, Py_ssize_t len)
{
    if (c->str != NULL && c->len == len && memcmp(c->bytes, bytes, (size_t)len) == 0) {
        Py_INCREF(c->str);
        return c->str;
    }
    PyObject *name = PyUnicode_DecodeUTF8((const char *)bytes, len, NULL /* strict */);
    if (name != NULL) {
        Py_XDECREF(c->str);
        Py_INCREF(name);
        c->str = name;
        c->bytes = bytes;
        c->len = len;
    }
    return name;
}

/* Call em->fn for record `i` of `count` with the given fields (borrowed); 0 on success (or when
 * the record is before em->start), -1 when fn raised an Exception (em->error set, no exception
 * pending), -2 when it raised another BaseException (pending: it propagates). */
static int
emit_one(emit_t *em, int64_t i, int64_t count, PyObject *value, PyObject *key, PyObject *timestamp,
         PyObject *headers)
{
    if (i < em->start) {
        return 0;
    }
    PyObject **args = em->stack + 1;
    PyObject *mark = NULL;
    args[em->value_slot] = value;
    args[em->key_slot] = key;
    args[em->timestamp_slot] = timestamp;
    args[em->headers_slot] = headers;
    if (em->mark_slot >= 0) {
        mark = args[em->mark_slot];
        if (count == 1 && em->mark_only != NULL) {
            args[em->mark_slot] = em->mark_only;
        }
        else if (i == 0 && em->mark_first != NULL) {
            args[em->mark_slot] = em->mark_first;
        }
        else if (i == count - 1 && em->mark_last != NULL) {
            args[em->mark_slot] = em->mark_last;
        }
    }
    PyObject *r = PyObject_Vectorcall(em->fn, args, (size_t)em->nargs | PY_VECTORCALL_ARGUMENTS_OFFSET,
                                      NULL);
    if (mark != NULL) {
        args[em->mark_slot] = mark;
    }
    if (r == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_Exception)) {
            return -2; /* KeyboardInterrupt, SystemExit...: propagate */
        }
        PyObject *type, *val, *tb;
        PyErr_Fetch(&type, &val, &tb);
        PyErr_NormalizeException(&type, &val, &tb);
        if (tb != NULL && val != NULL) {
            PyException_SetTraceback(val, tb);
        }
        Py_XDECREF(type);
        Py_XDECREF(tb);
        em->error = val;
        return -1;
    }
    Py_DECREF(r);
    em->emitted = i + 1;
    return 0;
}

static PyObject *
decode(const uint8_t *buf, Py_ssize_t end, PyObject *count_obj, int64_t count,
       const intarg_t *base_offset, const intarg_t *first_timestamp, PyObject *log_append_ts,
       emit_t *em)
{
    Py_ssize_t cap = (Py_ssize_t)(count < (int64_t)(end / MIN_RECORD_BYTES)
                                      ? count
                                      : (int64_t)(end / MIN_RECORD_BYTES));
    if (cap < 0) {
        cap = 0;
    }
    PyObject *out = PyList_New(em == NULL ? cap : 0);
    if (out == NULL) {
        return NULL;
    }
    name_cache_t names = {NULL, 0, NULL};
    /* The previous record's headers, and the bytes they were parsed from: records of a batch
     * often carry identical headers, which then share one (immutable in decode mode) object
     * instead of being parsed and allocated again - the same bytes give the same headers. */
    PyObject *prev_headers = NULL;
    const uint8_t *prev_hbytes = NULL;
    Py_ssize_t prev_hlen = -1;
    int64_t prev_nh = -1;
    const int use_append_ts = log_append_ts != Py_None;
    Py_ssize_t pos = 0;
    /* per-record objects, released on the error path */
    PyObject *key = NULL, *value = NULL, *headers = NULL, *offset = NULL, *timestamp = NULL;

    for (int64_t i = 0; i < count; i++) {
        Py_ssize_t start = pos;
        varint_t length, ts_delta, offset_delta, n_headers;
        Py_ssize_t kstart = 0, klen = 0, vstart = 0, vlen = 0;

        if (read_varint(buf, end, &pos, &length, "record length") < 0) {
            goto error;
        }
        Py_ssize_t body_start = pos;
        if (VARINT_NEGATIVE(length) || VARINT_WIDE(length) || length.v > (int64_t)(end - pos)) {
            PyObject *lobj = varint_pylong(&length);
            if (lobj == NULL) {
                goto error;
            }
            raise_corrupt(PyUnicode_FromFormat("record length %S does not fit in the batch", lobj),
                          start, PyUnicode_FromFormat("a length between 0 and %zd", end - pos));
            Py_DECREF(lobj);
            goto error;
        }
        pos += 1; /* attributes (unused); not bounds-checked, as in the reference */
        if (read_varint(buf, end, &pos, &ts_delta, "timestampDelta") < 0
            || read_varint(buf, end, &pos, &offset_delta, "offsetDelta") < 0
            || read_blob(buf, end, &pos, "key", "key length", &kstart, &klen) < 0
            || read_blob(buf, end, &pos, "value", "value length", &vstart, &vlen) < 0
            || read_varint(buf, end, &pos, &n_headers, "header count") < 0) {
            goto error;
        }
        if (VARINT_NEGATIVE(n_headers)) {
            PyObject *nobj = varint_pylong(&n_headers);
            if (nobj == NULL) {
                goto error;
            }
            raise_corrupt(PyUnicode_FromFormat("header count %S", nobj), pos,
                          PyUnicode_FromString("a count >= 0"));
            Py_DECREF(nobj);
            goto error;
        }
        /* A count the remaining bytes cannot hold fails inside the loop (each header takes >= 2
         * bytes and no read goes past `end`); a wide count behaves like an endless one. */
        int64_t nh = VARINT_WIDE(n_headers) ? INT64_MAX : n_headers.v;
        int64_t room = (int64_t)((end - pos) / MIN_HEADER_BYTES);
        Py_ssize_t hcap = (Py_ssize_t)(nh < room ? nh : room);
        Py_ssize_t hsec_start = pos;
        Py_ssize_t hsec_len = body_start + (Py_ssize_t)length.v - pos; /* to the record's end */
        int fresh_headers = 1;
        if (prev_headers != NULL && nh == prev_nh && hsec_len == prev_hlen
            && memcmp(buf + pos, prev_hbytes, (size_t)hsec_len) == 0) {
            headers = prev_headers;
            Py_INCREF(headers);
            pos += hsec_len;
            fresh_headers = 0;
            nh = 0; /* nothing left to parse */
        }
        else if (em == NULL) {
            headers = PyTuple_New(hcap);
        }
        else if (nh == 0) {
            headers = Py_None; /* produce(headers=None): no list for a record without headers */
            Py_INCREF(headers);
        }
        else {
            headers = PyList_New(hcap);
        }
        if (headers == NULL) {
            goto error;
        }
        for (int64_t h = 0; h < nh; h++) {
            Py_ssize_t hkstart = 0, hklen = 0, hvstart = 0, hvlen = 0;
            if (read_blob(buf, end, &pos, "header key", "header key length", &hkstart, &hklen)
                < 0) {
                goto error;
            }
            if (hklen < 0) {
                raise_corrupt(PyUnicode_FromString("null header key"), pos,
                              PyUnicode_FromString("a UTF-8 header name"));
                goto error;
            }
            if (read_blob(buf, end, &pos, "header value", "header value length", &hvstart,
                          &hvlen)
                < 0) {
                goto error;
            }
            PyObject *name = cached_name(&names, buf + hkstart, hklen);
            if (name == NULL) {
                if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                    PyErr_Clear();
                    raise_corrupt(PyUnicode_FromString("header key is not UTF-8"), pos,
                                  PyUnicode_FromString("a UTF-8 header name"));
                }
                goto error;
            }
            PyObject *hvalue = blob_object(buf, hvstart, hvlen);
            if (hvalue == NULL) {
                Py_DECREF(name);
                goto error;
            }
            PyObject *header = em == NULL ? Header_type->tp_alloc(Header_type, 2) : PyTuple_New(2);
            if (header == NULL) {
                Py_DECREF(name);
                Py_DECREF(hvalue);
                goto error;
            }
            PyTuple_SET_ITEM(header, 0, name);
            PyTuple_SET_ITEM(header, 1, hvalue);
            if (h >= hcap) { /* unreachable: see the bound above */
                Py_DECREF(header);
                PyErr_SetString(PyExc_SystemError, "_speedups: header bound violated");
                goto error;
            }
            if (em == NULL) {
                PyTuple_SET_ITEM(headers, (Py_ssize_t)h, header);
            }
            else {
                PyList_SET_ITEM(headers, (Py_ssize_t)h, header);
            }
        }
        if (pos != body_start + (Py_ssize_t)length.v) {
            raise_corrupt(PyUnicode_FromFormat("record fields end at byte %zd, its length says %zd",
                                               pos, body_start + (Py_ssize_t)length.v),
                          start, PyUnicode_FromString("fields to fill exactly the record length"));
            goto error;
        }
        if (fresh_headers && n_headers.v > 0 && !VARINT_WIDE(n_headers)) {
            Py_XSETREF(prev_headers, Py_NewRef(headers));
            prev_hbytes = buf + hsec_start;
            prev_hlen = pos - hsec_start;
            prev_nh = n_headers.v;
        }
        /* Python evaluates the Record arguments in this order: offset, timestamp, key, value */
        if (em == NULL) {
            offset = add_delta(base_offset, &offset_delta);
            if (offset == NULL) {
                goto error;
            }
        }
        if (em != NULL && em->zero != NULL) {
            timestamp = em->zero;
            Py_INCREF(timestamp);
        }
        else if (use_append_ts) {
            timestamp = log_append_ts;
            Py_INCREF(timestamp);
        }
        else {
            timestamp = add_delta(first_timestamp, &ts_delta);
            if (timestamp == NULL) {
                goto error;
            }
        }
        key = blob_object(buf, kstart, klen);
        if (key == NULL) {
            goto error;
        }
        value = blob_object(buf, vstart, vlen);
        if (value == NULL) {
            goto error;
        }
        if (em != NULL) {
            int rc = emit_one(em, i, count, value, key, timestamp, headers);
            Py_CLEAR(key);
            Py_CLEAR(value);
            Py_CLEAR(timestamp);
            Py_CLEAR(headers);
            if (rc == -2) {
                goto error;
            }
            if (rc < 0) {
                break; /* fn raised: em->error holds it */
            }
            continue;
        }
        PyObject *record = Record_type->tp_alloc(Record_type, 5);
        if (record == NULL) {
            goto error;
        }
        /* the tuple takes over our references */
        PyTuple_SET_ITEM(record, 0, offset);
        PyTuple_SET_ITEM(record, 1, timestamp);
        PyTuple_SET_ITEM(record, 2, key);
        PyTuple_SET_ITEM(record, 3, value);
        PyTuple_SET_ITEM(record, 4, headers);
        offset = timestamp = key = value = headers = NULL;
        if (i < cap) {
            PyList_SET_ITEM(out, (Py_ssize_t)i, record);
        }
        else { /* unreachable: n records need >= 7n bytes (kept for safety) */
            int rc = PyList_Append(out, record);
            Py_DECREF(record);
            if (rc < 0) {
                goto error;
            }
        }
    }
    if (em != NULL && em->error != NULL) {
        Py_XDECREF(names.str);
        Py_XDECREF(prev_headers);
        return out; /* stopped by fn: the caller reports em->error */
    }
    if (pos != end) {
        raise_corrupt(PyUnicode_FromFormat("%zd bytes left after the %S records the header declares",
                                           end - pos, count_obj),
                      pos, PyUnicode_FromString("recordCount to cover the whole batch"));
        goto error;
    }
    Py_XDECREF(names.str);
    Py_XDECREF(prev_headers);
    return out;

error:
    Py_XDECREF(names.str);
    Py_XDECREF(prev_headers);
    /* list/tuple deallocation tolerates the still-NULL slots */
    Py_XDECREF(key);
    Py_XDECREF(value);
    Py_XDECREF(headers);
    Py_XDECREF(offset);
    Py_XDECREF(timestamp);
    Py_DECREF(out);
    return NULL;
}

PyDoc_STRVAR(decode_records_v2_doc,
"decode_records_v2(data, count, base_offset, first_timestamp, log_append_ts) -> list[Record]\n"
"\n"
"Decode `count` magic-2 records from the (decompressed) records section `data`.\n"
"Compiled twin of segment_lib.record_batch._decode_records_python: same results, same\n"
"CorruptRecordError (positions relative to `data`) for the same bad bytes.");

static PyObject *
decode_records_v2(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "count", "base_offset", "first_timestamp", "log_append_ts",
                             NULL};
    PyObject *data, *count_arg, *base_obj, *first_ts_obj, *log_append_ts;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO:decode_records_v2", kwlist, &data,
                                     &count_arg, &base_obj, &first_ts_obj, &log_append_ts)) {
        return NULL;
    }
    if (ensure_imports() < 0) {
        return NULL;
    }
    /* Python copies with bytes(data) first, so a non-buffer argument fails (or converts) there,
     * before `count` is looked at. */
    Py_buffer view;
    PyObject *copy = NULL;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        /* e.g. a non-contiguous memoryview: bytes() copies it in logical order */
        PyErr_Clear();
        copy = PyObject_CallOneArg((PyObject *)&PyBytes_Type, data);
        if (copy == NULL) {
            return NULL;
        }
        if (PyObject_GetBuffer(copy, &view, PyBUF_SIMPLE) < 0) {
            Py_DECREF(copy);
            return NULL;
        }
    }
    PyObject *result = NULL;
    PyObject *count_index = NULL;
    intarg_t base_offset, first_timestamp;
    /* range(count): count must support __index__; values beyond int64 clamp harmlessly (a
     * negative count means no records; a huge one fails once the bytes run out) */
    count_index = PyNumber_Index(count_arg);
    if (count_index == NULL) {
        goto done;
    }
    int overflow = 0;
    long long count = PyLong_AsLongLongAndOverflow(count_index, &overflow);
    if (count == -1 && PyErr_Occurred()) {
        goto done;
    }
    if (overflow > 0) {
        count = INT64_MAX;
    }
    else if (overflow < 0) {
        count = 0;
    }
    if (intarg_init(&base_offset, base_obj) < 0 || intarg_init(&first_timestamp, first_ts_obj) < 0) {
        goto done;
    }
    result = decode((const uint8_t *)view.buf, view.len, count_arg, (int64_t)count, &base_offset,
                    &first_timestamp, log_append_ts, NULL);
done:
    Py_XDECREF(count_index);
    PyBuffer_Release(&view);
    Py_XDECREF(copy);
    return result;
}

PyDoc_STRVAR(emit_records_v2_doc,
"emit_records_v2(data, count, first_timestamp, log_append_ts, fn, template, slots, *, start=0,\n"
"                marks=None, zero_timestamps=False) -> (emitted, error)\n"
"\n"
"Decode `count` magic-2 records from the records section `data` (as decode_records_v2 does,\n"
"same checks and CorruptRecordError) and, instead of returning Record objects, call\n"
"fn(*args) once per record in order, args being `template` (a tuple) with the record's value,\n"
"key, timestamp and headers put at the indexes slots = (value, key, timestamp, headers, mark)\n"
"(mark = -1: none).  Headers are passed as a list of (str, bytes) tuples, or None when the\n"
"record has none (records with byte-identical headers may share one list: fn must not\n"
"change it).  marks = (first, last, only) puts `first` in the mark slot of record 0,\n"
"`last` in that of the final record and `only` in that of a lone record (a None item is\n"
"skipped: a lone record without `only` takes `first`, else `last`; unmarked records keep the\n"
"template's value).  zero_timestamps passes 0 as every timestamp.  Records before `start` are\n"
"parsed but not emitted.  An exception raised by fn stops the loop and is returned, not\n"
"raised: `emitted` is the index of the first record fn did not accept (`count` when all\n"
"were), `error` what it raised (None when all were emitted).");

static PyObject *
emit_records_v2(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"data", "count", "first_timestamp", "log_append_ts", "fn",
                             "template", "slots", "start", "marks", "zero_timestamps", NULL};
    PyObject *data, *first_ts_obj, *log_append_ts, *fn, *template_, *slots, *marks = Py_None;
    Py_ssize_t count;
    long long start = 0;
    int zero_timestamps = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OnOOOO!O!|$LOp:emit_records_v2", kwlist,
                                     &data, &count, &first_ts_obj, &log_append_ts, &fn,
                                     &PyTuple_Type, &template_, &PyTuple_Type, &slots, &start,
                                     &marks, &zero_timestamps)) {
        return NULL;
    }
    if (ensure_imports() < 0) {
        return NULL;
    }
    emit_t em;
    memset(&em, 0, sizeof em);
    em.fn = fn;
    em.nargs = PyTuple_GET_SIZE(template_);
    if (em.nargs > EMIT_MAX_ARGS) {
        return PyErr_Format(PyExc_ValueError, "template has %zd arguments, at most %d", em.nargs,
                            EMIT_MAX_ARGS);
    }
    for (Py_ssize_t i = 0; i < em.nargs; i++) {
        em.stack[1 + i] = PyTuple_GET_ITEM(template_, i); /* borrowed: the template outlives us */
    }
    Py_ssize_t *slot_ptrs[] = {&em.value_slot, &em.key_slot, &em.timestamp_slot, &em.headers_slot,
                               &em.mark_slot};
    if (PyTuple_GET_SIZE(slots) != 5) {
        return PyErr_Format(PyExc_ValueError,
                            "slots must be (value, key, timestamp, headers, mark), got %zd items",
                            PyTuple_GET_SIZE(slots));
    }
    for (int k = 0; k < 5; k++) {
        Py_ssize_t v = PyLong_AsSsize_t(PyTuple_GET_ITEM(slots, k));
        if (v == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (v < (k == 4 ? -1 : 0) || v >= em.nargs) {
            return PyErr_Format(PyExc_ValueError, "slot %zd is outside the template (%zd args)",
                                v, em.nargs);
        }
        for (int j = 0; j < k; j++) {
            if (v >= 0 && *slot_ptrs[j] == v) {
                return PyErr_Format(PyExc_ValueError, "slot %zd is given twice", v);
            }
        }
        *slot_ptrs[k] = v;
    }
    if (marks != Py_None) {
        if (!PyTuple_Check(marks) || PyTuple_GET_SIZE(marks) != 3 || em.mark_slot < 0) {
            PyErr_SetString(PyExc_ValueError,
                            "marks must be a (first, last, only) tuple and need a mark slot");
            return NULL;
        }
        em.mark_first = PyTuple_GET_ITEM(marks, 0);
        em.mark_last = PyTuple_GET_ITEM(marks, 1);
        em.mark_only = PyTuple_GET_ITEM(marks, 2);
        /* None in marks: keep the template's value */
        em.mark_first = em.mark_first == Py_None ? NULL : em.mark_first;
        em.mark_last = em.mark_last == Py_None ? NULL : em.mark_last;
        em.mark_only = em.mark_only == Py_None ? NULL : em.mark_only;
    }
    em.start = start < 0 ? 0 : (int64_t)start;
    em.emitted = em.start;
    PyObject *zero = NULL;
    if (zero_timestamps) {
        zero = PyLong_FromLong(0);
        if (zero == NULL) {
            return NULL;
        }
        em.zero = zero;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) {
        Py_XDECREF(zero);
        return NULL;
    }
    PyObject *result = NULL;
    intarg_t unused_base, first_timestamp;
    PyObject *count_obj = PyLong_FromSsize_t(count);
    if (count_obj == NULL || intarg_init(&unused_base, Py_None) < 0
        || intarg_init(&first_timestamp, first_ts_obj) < 0) {
        goto done;
    }
    PyObject *out = decode((const uint8_t *)view.buf, view.len, count_obj, (int64_t)count,
                           &unused_base, &first_timestamp, log_append_ts, &em);
    if (out == NULL) {
        goto done;
    }
    Py_DECREF(out);
    result = Py_BuildValue("(LO)", (long long)em.emitted, em.error != NULL ? em.error : Py_None);
done:
    Py_XDECREF(em.error);
    Py_XDECREF(count_obj);
    Py_XDECREF(zero);
    PyBuffer_Release(&view);
    return result;
}

/* ==== CRC-32C ============================================================================
 *
 * The scan verifies each batch's CRC-32C inside its C loop with the code shared with
 * segment_lib._summary in _crc32c.h (why it is hand-written, the implementations and the
 * measurements behind them: there), by the best raw update the CPU has (crc_raw_auto, reported
 * as CRC32C_IMPL).  crc32c() (also in _crc32c.h) exposes it and the others for tests and
 * benchmarks, taking `value` mod 2^32 as the crc32c package does. */

/* ==== the batch scan ======================================================================
 *
 * Contract: scan_batches_v2(buf, start, end, verify_crc, max_batches=-1) walks consecutive
 * magic-2 batches of buf[start:end] and returns (headers, stop_position, stop_reason): the
 * BatchHeaders of every batch it accepted (equal, field by field and type by type, to what
 * segment_lib.record_batch.parse_batch_header_v2 returns for them), the position where it
 * stopped, and why:
 *   "end"      stop_position == end: everything was scanned;
 *   "limit"    max_batches headers were returned (max_batches < 0: no limit);
 *   "short"    fewer than MAGIC_OFFSET + 1 bytes remain (a torn or zero-filled tail);
 *   "magic"    the magic byte is not 2 (a legacy message, a zero-filled tail, or garbage);
 *   "invalid"  batchLength < MIN_BATCH_LENGTH, codec id > 4, or a negative recordCount or
 *              lastOffsetDelta: what parse_batch_header_v2 / iter_batches reject;
 *   "torn"     the batch extends past `end`;
 *   "crc"      (verify_crc only) the stored CRC-32C does not match attributes..end of batch.
 * It never raises for bad bytes: everything it does not accept is left to the Python reader
 * (segment_lib.log_file.iter_batches), which continues from stop_position and raises there
 * exactly the error it always raised, or reads the legacy message and hands back.  So a batch
 * is accepted here only under the exact conditions under which the Python path yields it.
 *
 * The header layout, the readers, the header checks and the stop reasons: _batch_v2.h. */

/* BatchHeader's fields in the order this file fills them (checked against _fields). */
static const char *const batch_header_fields[] = {
    "position", "size", "magic", "base_offset", "last_offset", "record_count", "attributes",
    "codec", "timestamp_type", "first_timestamp", "max_timestamp", "crc",
    "partition_leader_epoch", "producer_id", "producer_epoch", "base_sequence",
    "is_transactional", "is_control",
};
#define N_BATCH_HEADER_FIELDS ((Py_ssize_t)(sizeof(batch_header_fields) / sizeof(char *)))

static PyTypeObject *BatchHeader_type = NULL; /* segment_lib.records.BatchHeader */
static PyObject *codec_members = NULL;        /* segment_lib.record_batch._CODECS (by id) */
static PyObject *ts_create_time = NULL;       /* TimestampType.CREATE_TIME */
static PyObject *ts_log_append_time = NULL;   /* TimestampType.LOG_APPEND_TIME */

static int
ensure_scan_imports(void)
{
    if (BatchHeader_type != NULL) {
        return 0;
    }
    PyObject *records = NULL, *record_batch = NULL, *header = NULL, *fields = NULL,
             *codecs = NULL, *ts_type = NULL, *create = NULL, *append = NULL;
    int rc = -1;
    if (v2_import_checked(&records, &record_batch, "segment_lib._speedups") < 0) {
        goto done;
    }
    header = PyObject_GetAttrString(records, "BatchHeader");
    if (header == NULL || check_tuple_type(header, "BatchHeader", N_BATCH_HEADER_FIELDS) < 0) {
        goto done;
    }
    fields = PyObject_GetAttrString(header, "_fields");
    if (fields == NULL || !PyTuple_Check(fields)) {
        PyErr_SetString(PyExc_TypeError, "BatchHeader._fields is not a tuple");
        goto done;
    }
    for (Py_ssize_t i = 0; i < N_BATCH_HEADER_FIELDS; i++) {
        PyObject *name = PyTuple_GET_ITEM(fields, i);
        if (!PyUnicode_Check(name) || PyUnicode_CompareWithASCIIString(name,
                                                                       batch_header_fields[i])) {
            PyErr_Format(PyExc_TypeError, "BatchHeader field %zd is %R, the C scan fills %s", i,
                         name, batch_header_fields[i]);
            goto done;
        }
    }
    /* the codec members exactly as parse_batch_header_v2 picks them; an id is valid iff it
     * indexes this tuple (the Python check is `id > Codec.ZSTD`, and _CODECS has ZSTD + 1) */
    codecs = PyObject_GetAttrString(record_batch, "_CODECS");
    if (codecs == NULL || !PyTuple_CheckExact(codecs) || PyTuple_GET_SIZE(codecs) > 8) {
        PyErr_SetString(PyExc_TypeError, "segment_lib.record_batch._CODECS is not a codec tuple");
        goto done;
    }
    ts_type = PyObject_GetAttrString(records, "TimestampType");
    create = ts_type ? PyObject_GetAttrString(ts_type, "CREATE_TIME") : NULL;
    append = create ? PyObject_GetAttrString(ts_type, "LOG_APPEND_TIME") : NULL;
    if (append == NULL) {
        goto done;
    }
    /* module-lifetime references */
    if (v2_intern_reasons() < 0) {
        goto done;
    }
    codec_members = codecs;
    ts_create_time = create;
    ts_log_append_time = append;
    BatchHeader_type = (PyTypeObject *)header;
    codecs = create = append = header = NULL;
    rc = 0;
done:
    Py_XDECREF(records);
    Py_XDECREF(record_batch);
    Py_XDECREF(header);
    Py_XDECREF(fields);
    Py_XDECREF(codecs);
    Py_XDECREF(ts_type);
    Py_XDECREF(create);
    Py_XDECREF(append);
    return rc;
}

/* base_offset + last_offset_delta as Python computes it (exact beyond int64) */
static PyObject *
last_offset_object(int64_t base, int32_t delta)
{
    int64_t sum;
    if (!__builtin_add_overflow(base, (int64_t)delta, &sum)) {
        return PyLong_FromLongLong(sum);
    }
    PyObject *b = PyLong_FromLongLong(base);
    PyObject *d = PyLong_FromLong(delta);
    PyObject *r = (b && d) ? PyNumber_Add(b, d) : NULL;
    Py_XDECREF(b);
    Py_XDECREF(d);
    return r;
}

/* The BatchHeader of the (validated) batch at p, found at `position` (new reference). */
static PyObject *
build_batch_header(const uint8_t *p, Py_ssize_t position, size_t size)
{
    int16_t attributes = be_i16(p + OFF_ATTRIBUTES);
    PyObject *h = BatchHeader_type->tp_alloc(BatchHeader_type, N_BATCH_HEADER_FIELDS);
    if (h == NULL) {
        return NULL;
    }
    PyObject *codec = PyTuple_GET_ITEM(codec_members, attributes & ATTR_CODEC_MASK);
    PyObject *ts_type = (attributes & ATTR_TIMESTAMP_TYPE) ? ts_log_append_time : ts_create_time;
    PyObject *is_txn = (attributes & ATTR_TRANSACTIONAL) ? Py_True : Py_False;
    PyObject *is_control = (attributes & ATTR_CONTROL) ? Py_True : Py_False;
    Py_INCREF(codec);
    Py_INCREF(ts_type);
    Py_INCREF(is_txn);
    Py_INCREF(is_control);
    /* a NULL slot (failed allocation) is fine for the tuple's deallocator */
    PyTuple_SET_ITEM(h, 0, PyLong_FromSsize_t(position));
    PyTuple_SET_ITEM(h, 1, PyLong_FromSize_t(size));
    PyTuple_SET_ITEM(h, 2, PyLong_FromLong(p[OFF_MAGIC]));
    PyTuple_SET_ITEM(h, 3, PyLong_FromLongLong(be_i64(p + OFF_BASE_OFFSET)));
    PyTuple_SET_ITEM(h, 4, last_offset_object(be_i64(p + OFF_BASE_OFFSET),
                                              be_i32(p + OFF_LAST_OFFSET_DELTA)));
    PyTuple_SET_ITEM(h, 5, PyLong_FromLong(be_i32(p + OFF_RECORD_COUNT)));
    PyTuple_SET_ITEM(h, 6, PyLong_FromLong(attributes));
    PyTuple_SET_ITEM(h, 7, codec);
    PyTuple_SET_ITEM(h, 8, ts_type);
    PyTuple_SET_ITEM(h, 9, PyLong_FromLongLong(be_i64(p + OFF_FIRST_TIMESTAMP)));
    PyTuple_SET_ITEM(h, 10, PyLong_FromLongLong(be_i64(p + OFF_MAX_TIMESTAMP)));
    PyTuple_SET_ITEM(h, 11, PyLong_FromUnsignedLong(be_u32(p + OFF_CRC)));
    PyTuple_SET_ITEM(h, 12, PyLong_FromLong(be_i32(p + OFF_LEADER_EPOCH)));
    PyTuple_SET_ITEM(h, 13, PyLong_FromLongLong(be_i64(p + OFF_PRODUCER_ID)));
    PyTuple_SET_ITEM(h, 14, PyLong_FromLong(be_i16(p + OFF_PRODUCER_EPOCH)));
    PyTuple_SET_ITEM(h, 15, PyLong_FromLong(be_i32(p + OFF_BASE_SEQUENCE)));
    PyTuple_SET_ITEM(h, 16, is_txn);
    PyTuple_SET_ITEM(h, 17, is_control);
    for (Py_ssize_t i = 0; i < N_BATCH_HEADER_FIELDS; i++) {
        if (PyTuple_GET_ITEM(h, i) == NULL) {
            Py_DECREF(h);
            return NULL;
        }
    }
    return h;
}

PyDoc_STRVAR(scan_batches_v2_doc,
"scan_batches_v2(buf, start, end, verify_crc, max_batches=-1)\n"
"    -> (list[BatchHeader], stop_position, stop_reason)\n"
"\n"
"Walk consecutive magic-2 batches of buf[start:end] (0 <= start, end <= len(buf)), checking\n"
"each one's CRC-32C when verify_crc, and return their headers, where the walk stopped and\n"
"why: 'end', 'limit' (max_batches reached; negative = no limit), or the first thing left to\n"
"the Python reader: 'short', 'magic', 'invalid', 'torn', 'crc'.  Never raises for bad bytes.");

static PyObject *
scan_batches_v2(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"buf", "start", "end", "verify_crc", "max_batches", NULL};
    PyObject *buf;
    Py_ssize_t start, end, max_batches = -1;
    int verify_crc;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Onnp|n:scan_batches_v2", kwlist, &buf,
                                     &start, &end, &verify_crc, &max_batches)) {
        return NULL;
    }
    if (ensure_scan_imports() < 0) {
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    if (start < 0 || end > view.len) {
        PyErr_Format(PyExc_ValueError,
                     "scan_batches_v2: need 0 <= start and end <= len(buf) = %zd, got %zd, %zd",
                     view.len, start, end);
        PyBuffer_Release(&view);
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const uint8_t *b = (const uint8_t *)view.buf;
    const crc_raw_fn raw = crc_raw_auto;
    const int n_codecs = (int)PyTuple_GET_SIZE(codec_members);
    v2_reason_t reason = V2_END;
    Py_ssize_t pos = start, n = 0;
    while (pos < end) {
        if (max_batches >= 0 && n >= max_batches) {
            reason = V2_LIMIT;
            break;
        }
        const uint8_t *p = b + pos;
        size_t size;
        reason = v2_check_header(p, (int64_t)(end - pos), n_codecs, &size);
        if (reason != V2_END) {
            break;
        }
        if (verify_crc) {
            const size_t span = size - V2_CRC_START;
            uint32_t computed;
            if (span >= CRC_RELEASE_GIL_BYTES) {
                Py_BEGIN_ALLOW_THREADS
                computed = ~raw(0xFFFFFFFFu, p + V2_CRC_START, span);
                Py_END_ALLOW_THREADS
            }
            else {
                computed = ~raw(0xFFFFFFFFu, p + V2_CRC_START, span);
            }
            if (computed != be_u32(p + OFF_CRC)) {
                reason = V2_CRC;
                break;
            }
        }
        PyObject *h = build_batch_header(p, pos, size);
        if (h == NULL || PyList_Append(out, h) < 0) {
            Py_XDECREF(h);
            Py_DECREF(out);
            PyBuffer_Release(&view);
            return NULL;
        }
        Py_DECREF(h);
        pos += (Py_ssize_t)size;
        n++;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(NnO)", out, pos, v2_reason_objects[reason]);
}

/* ==== module ============================================================================ */

static PyMethodDef methods[] = {
    {"decode_records_v2", (PyCFunction)(void (*)(void))decode_records_v2,
     METH_VARARGS | METH_KEYWORDS, decode_records_v2_doc},
    {"emit_records_v2", (PyCFunction)(void (*)(void))emit_records_v2,
     METH_VARARGS | METH_KEYWORDS, emit_records_v2_doc},
    {"scan_batches_v2", (PyCFunction)(void (*)(void))scan_batches_v2,
     METH_VARARGS | METH_KEYWORDS, scan_batches_v2_doc},
    CRC32C_METHOD_DEF,
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "segment_lib._speedups",
    "Compiled hot loops of segment_lib (optional; pure-Python twins give identical results).",
    -1,
    methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    PyObject *m = PyModule_Create(&module);
    /* the CRC-32C kernels, and CRC32C_IMPL: which one the scan uses on this CPU (reported by
     * the benchmarks) */
    if (m != NULL && crc_module_init(m) < 0) {
        Py_CLEAR(m);
    }
    return m;
}
