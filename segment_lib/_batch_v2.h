/*
 * segment_lib/_batch_v2.h: the magic-2 record batch header as the compiled walks see it
 * (segment_lib._speedups' scan_batches_v2, segment_lib._summary's summarize_v2): its layout,
 * the big-endian readers, the header checks both walks accept a batch by, their stop reasons,
 * and the import-time check of the layout against segment_lib.record_batch.
 *
 * One copy for both: everything here is `static`; include it after <Python.h> (the Python glue
 * at the end uses it).  setup.py lists it in both extensions' `depends`.
 */
#ifndef SEGMENT_LIB_BATCH_V2_H
#define SEGMENT_LIB_BATCH_V2_H

#include <stdint.h>

/* The header layout (big-endian), offsets derived from the field sizes and checked once
 * against segment_lib.record_batch's struct-computed constants (v2_check_layout): */
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
#define V2_CRC_START OFF_ATTRIBUTES                    /* CRC covers attributes .. end */
#define V2_LOG_OVERHEAD OFF_LEADER_EPOCH               /* baseOffset + batchLength */
#define V2_MIN_BATCH_LENGTH (V2_RECORDS_START - V2_LOG_OVERHEAD)
#define V2_MAGIC_OFFSET OFF_MAGIC
#define ATTR_CODEC_MASK 0x07
#define ATTR_TIMESTAMP_TYPE 0x08
#define ATTR_TRANSACTIONAL 0x10
#define ATTR_CONTROL 0x20

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

/* Why a walk stopped (the strings the Python side receives: see each walk's contract).
 * V2_END is also v2_check_header's "accepted". */
typedef enum {
    V2_END,     /* everything was walked */
    V2_LIMIT,   /* the caller's batch limit (scan_batches_v2's max_batches) */
    V2_SHORT,   /* fewer than MAGIC_OFFSET + 1 bytes remain */
    V2_MAGIC,   /* the magic byte is not 2 */
    V2_INVALID, /* a length, codec id, record count or offset delta the reader rejects */
    V2_TORN,    /* the batch goes on past the end */
    V2_CRC,     /* the stored CRC-32C does not match */
    V2_WIDE,    /* base offset + lastOffsetDelta overflows int64 (summarize_v2) */
    V2_N_REASONS
} v2_reason_t;

static const char *const v2_reason_names[V2_N_REASONS] = {
    "end", "limit", "short", "magic", "invalid", "torn", "crc", "wide",
};

/* Whether the batch at p, with `remaining` bytes from p to the end of the walk, passes the
 * header checks under which segment_lib.log_file.iter_batches yields a batch (the rest: its
 * CRC, checked by the callers): V2_END when it does (then *size is its size in bytes, all of
 * them inside the walk), else why not: V2_SHORT, V2_MAGIC, V2_INVALID (batchLength below the
 * minimum, a codec id >= n_codecs, a negative recordCount or lastOffsetDelta), V2_TORN. */
static inline v2_reason_t
v2_check_header(const uint8_t *p, int64_t remaining, int n_codecs, size_t *size)
{
    if (remaining < V2_MAGIC_OFFSET + 1) {
        return V2_SHORT;
    }
    if (p[OFF_MAGIC] != 2) {
        return V2_MAGIC;
    }
    const int32_t batch_length = be_i32(p + OFF_BATCH_LENGTH);
    if (batch_length < V2_MIN_BATCH_LENGTH) {
        return V2_INVALID;
    }
    if ((int64_t)batch_length + V2_LOG_OVERHEAD > remaining) {
        return V2_TORN;
    }
    /* from here the whole header is inside the walk */
    if ((be_i16(p + OFF_ATTRIBUTES) & ATTR_CODEC_MASK) >= n_codecs
        || be_i32(p + OFF_RECORD_COUNT) < 0 || be_i32(p + OFF_LAST_OFFSET_DELTA) < 0) {
        return V2_INVALID;
    }
    *size = (size_t)batch_length + V2_LOG_OVERHEAD;
    return V2_END;
}

/* ---- Python glue ---- */

/* the reasons as interned str (module lifetime), filled by v2_intern_reasons */
static PyObject *v2_reason_objects[V2_N_REASONS];

static int
v2_intern_reasons(void)
{
    for (int i = 0; i < V2_N_REASONS; i++) {
        if (v2_reason_objects[i] == NULL) {
            v2_reason_objects[i] = PyUnicode_InternFromString(v2_reason_names[i]);
            if (v2_reason_objects[i] == NULL) {
                return -1;
            }
        }
    }
    return 0;
}

/* 0 if module.name is an int equal to value, else -1 with TypeError/ImportError set */
static int
v2_check_constant(PyObject *module, const char *name, long value, const char *who)
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
        PyErr_Format(PyExc_ImportError, "%s: %s is %ld in Python but %ld in C", who, name, got,
                     value);
        return -1;
    }
    return 0;
}

/* Import segment_lib.records and segment_lib.record_batch into *records and *record_batch (new
 * references) and check that the layout above is what they compute: 0, or -1 with both NULL
 * and the error set (ImportError naming `who` for a mismatch). */
static int
v2_import_checked(PyObject **records, PyObject **record_batch, const char *who)
{
    *records = PyImport_ImportModule("segment_lib.records");
    *record_batch = *records ? PyImport_ImportModule("segment_lib.record_batch") : NULL;
    if (*record_batch == NULL) {
        Py_CLEAR(*records);
        return -1;
    }
    PyObject *const r = *records, *const rb = *record_batch;
    if (v2_check_constant(r, "LOG_OVERHEAD", V2_LOG_OVERHEAD, who) < 0
        || v2_check_constant(r, "MAGIC_OFFSET", V2_MAGIC_OFFSET, who) < 0
        || v2_check_constant(rb, "CRC_START", V2_CRC_START, who) < 0
        || v2_check_constant(rb, "RECORDS_START", V2_RECORDS_START, who) < 0
        || v2_check_constant(rb, "MIN_BATCH_LENGTH", V2_MIN_BATCH_LENGTH, who) < 0
        || v2_check_constant(rb, "_CODEC_MASK", ATTR_CODEC_MASK, who) < 0
        || v2_check_constant(rb, "_TIMESTAMP_TYPE_BIT", ATTR_TIMESTAMP_TYPE, who) < 0
        || v2_check_constant(rb, "_TRANSACTIONAL_BIT", ATTR_TRANSACTIONAL, who) < 0
        || v2_check_constant(rb, "_CONTROL_BIT", ATTR_CONTROL, who) < 0) {
        Py_CLEAR(*records);
        Py_CLEAR(*record_batch);
        return -1;
    }
    return 0;
}

#endif /* SEGMENT_LIB_BATCH_V2_H */
