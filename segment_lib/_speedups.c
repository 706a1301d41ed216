/*
 * segment_lib._speedups: the compiled magic-2 record decoder.
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
    /* 1-byte fast path: most lengths and deltas are small */
    if (p < end && buf[p] < 0x80) {
        unsigned int b = buf[p];
        out->lo = b;
        out->hi = 0;
        out->v = (int64_t)(b >> 1) ^ -(int64_t)(b & 1);
        *pp = p + 1;
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

static PyObject *
decode(const uint8_t *buf, Py_ssize_t end, PyObject *count_obj, int64_t count,
       const intarg_t *base_offset, const intarg_t *first_timestamp, PyObject *log_append_ts)
{
    Py_ssize_t cap = (Py_ssize_t)(count < (int64_t)(end / MIN_RECORD_BYTES)
                                      ? count
                                      : (int64_t)(end / MIN_RECORD_BYTES));
    if (cap < 0) {
        cap = 0;
    }
    PyObject *out = PyList_New(cap);
    if (out == NULL) {
        return NULL;
    }
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
        headers = PyTuple_New((Py_ssize_t)(nh < room ? nh : room));
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
            PyObject *name =
                PyUnicode_DecodeUTF8((const char *)buf + hkstart, hklen, NULL /* strict */);
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
            PyObject *header = Header_type->tp_alloc(Header_type, 2);
            if (header == NULL) {
                Py_DECREF(name);
                Py_DECREF(hvalue);
                goto error;
            }
            PyTuple_SET_ITEM(header, 0, name);
            PyTuple_SET_ITEM(header, 1, hvalue);
            if (h >= PyTuple_GET_SIZE(headers)) { /* unreachable: see the bound above */
                Py_DECREF(header);
                PyErr_SetString(PyExc_SystemError, "_speedups: header bound violated");
                goto error;
            }
            PyTuple_SET_ITEM(headers, (Py_ssize_t)h, header);
        }
        if (pos != body_start + (Py_ssize_t)length.v) {
            raise_corrupt(PyUnicode_FromFormat("record fields end at byte %zd, its length says %zd",
                                               pos, body_start + (Py_ssize_t)length.v),
                          start, PyUnicode_FromString("fields to fill exactly the record length"));
            goto error;
        }
        /* Python evaluates the Record arguments in this order: offset, timestamp, key, value */
        offset = add_delta(base_offset, &offset_delta);
        if (offset == NULL) {
            goto error;
        }
        if (use_append_ts) {
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
    if (pos != end) {
        raise_corrupt(PyUnicode_FromFormat("%zd bytes left after the %S records the header declares",
                                           end - pos, count_obj),
                      pos, PyUnicode_FromString("recordCount to cover the whole batch"));
        goto error;
    }
    return out;

error:
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
                    &first_timestamp, log_append_ts);
done:
    Py_XDECREF(count_index);
    PyBuffer_Release(&view);
    Py_XDECREF(copy);
    return result;
}

static PyMethodDef methods[] = {
    {"decode_records_v2", (PyCFunction)(void (*)(void))decode_records_v2,
     METH_VARARGS | METH_KEYWORDS, decode_records_v2_doc},
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
    return PyModule_Create(&module);
}
