/* The message segment files' record packer in C: pack_messages(rows) does what
 * broker/storage/segments.py's Python loop does for a group commit's message rows (segment_format's ``M``
 * record: u32 length, u32 CRC-32, then kind, key, expiry, flags, the four lengths and the bytes), byte for
 * byte; tests/unit/storage/test_segment_packer.py compares the two.
 *
 * Why C: the writer thread holds the GIL for every Python step of that loop, and the loop thread needs it for
 * everything else: per 1 KiB message ~0.8 us, half of it zlib's CRC-32, which the zlib module computes with
 * the GIL held below 5 KiB. Here the rows are read with the GIL (their strings' UTF-8, their buffers), then
 * the copies and the CRCs run with it released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <zlib.h>

#define FIXED_FORMAT "<BQqBHHII"
#define HEAD_SIZE 8
#define FIXED_SIZE 30 /* 1 + 8 + 8 + 1 + 2 + 2 + 4 + 4 */
#define KIND_MESSAGE 'M'
#define FLAG_EXPIRES 2

typedef struct {
    const char *exchange, *routing_key;
    Py_ssize_t exchange_n, routing_n;
    Py_buffer header, body;
    int buffers; /* how many of header, body are held */
    uint64_t key;
    int64_t expires;
    uint8_t flags;
} Item;

static inline void put16(unsigned char *p, uint16_t v) {
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static inline void put32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static inline void put64(unsigned char *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void release(Item *items, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        if (items[i].buffers > 0) PyBuffer_Release(&items[i].header);
        if (items[i].buffers > 1) PyBuffer_Release(&items[i].body);
    }
    PyMem_Free(items);
}

/* Reads one row into item (GIL held): 0, or -1 with an exception set. */
static int read_row(PyObject *row, Item *item, Py_ssize_t *payload) {
    if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 7) {
        PyErr_SetString(PyExc_TypeError, "a message row is a tuple of 7");
        return -1;
    }
    item->key = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(row, 0));
    if (item->key == (uint64_t)-1 && PyErr_Occurred()) return -1;
    item->exchange = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(row, 1), &item->exchange_n);
    if (item->exchange == NULL) return -1;
    item->routing_key = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(row, 2), &item->routing_n);
    if (item->routing_key == NULL) return -1;
    if (item->exchange_n > 0xFFFF || item->routing_n > 0xFFFF) {
        PyErr_SetString(PyExc_ValueError, "exchange or routing key longer than 65535 bytes");
        return -1;
    }
    PyObject *expires = PyTuple_GET_ITEM(row, 5);
    long delivered = PyLong_AsLong(PyTuple_GET_ITEM(row, 6));
    if (delivered == -1 && PyErr_Occurred()) return -1;
    if (delivered < 0 || delivered > 255) {
        PyErr_SetString(PyExc_ValueError, "delivered is a byte");
        return -1;
    }
    item->flags = (uint8_t)delivered;
    item->expires = 0;
    if (expires != Py_None) {
        item->expires = PyLong_AsLongLong(expires);
        if (item->expires == -1 && PyErr_Occurred()) return -1;
        item->flags |= FLAG_EXPIRES;
    }
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(row, 3), &item->header, PyBUF_SIMPLE) < 0) return -1;
    item->buffers = 1;
    if (PyObject_GetBuffer(PyTuple_GET_ITEM(row, 4), &item->body, PyBUF_SIMPLE) < 0) return -1;
    item->buffers = 2;
    if (item->header.len > 0xFFFFFFFFLL || item->body.len > 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_ValueError, "header or body longer than 4 GiB");
        return -1;
    }
    *payload = FIXED_SIZE + item->exchange_n + item->routing_n + item->header.len + item->body.len;
    if (*payload > 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_ValueError, "record longer than 4 GiB");
        return -1;
    }
    return 0;
}

/* Writes one record at out (GIL released). */
static unsigned char *write_record(unsigned char *out, const Item *item, Py_ssize_t payload) {
    unsigned char *p = out + HEAD_SIZE;
    p[0] = KIND_MESSAGE;
    put64(p + 1, item->key);
    put64(p + 9, (uint64_t)item->expires);
    p[17] = item->flags;
    put16(p + 18, (uint16_t)item->exchange_n);
    put16(p + 20, (uint16_t)item->routing_n);
    put32(p + 22, (uint32_t)item->header.len);
    put32(p + 26, (uint32_t)item->body.len);
    p += FIXED_SIZE;
    memcpy(p, item->exchange, (size_t)item->exchange_n);
    p += item->exchange_n;
    memcpy(p, item->routing_key, (size_t)item->routing_n);
    p += item->routing_n;
    memcpy(p, item->header.buf, (size_t)item->header.len);
    p += item->header.len;
    memcpy(p, item->body.buf, (size_t)item->body.len);
    p += item->body.len;
    uLong crc = crc32_z(0L, out + HEAD_SIZE, (size_t)payload);
    put32(out, (uint32_t)payload);
    put32(out + 4, (uint32_t)crc);
    return p;
}

static PyObject *pack_messages(PyObject *module, PyObject *rows) {
    if (!PyList_Check(rows)) {
        PyErr_SetString(PyExc_TypeError, "rows must be a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(rows);
    Item *items = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Item));
    Py_ssize_t *payloads = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Py_ssize_t));
    PyObject *lengths = PyList_New(n);
    PyObject *out = NULL;
    if (items == NULL || payloads == NULL || lengths == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (read_row(PyList_GET_ITEM(rows, i), &items[i], &payloads[i]) < 0) goto fail;
        PyObject *length = PyLong_FromSsize_t(HEAD_SIZE + payloads[i]);
        if (length == NULL) goto fail;
        PyList_SET_ITEM(lengths, i, length);
        total += HEAD_SIZE + payloads[i];
    }
    out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) goto fail;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
    /* The rows list is the caller's own, and each row, string and buffer held: nothing moves meanwhile. */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) p = write_record(p, &items[i], payloads[i]);
    Py_END_ALLOW_THREADS
    release(items, n);
    PyMem_Free(payloads);
    return Py_BuildValue("(NN)", out, lengths);
fail:
    if (items != NULL) release(items, n);
    PyMem_Free(payloads);
    Py_XDECREF(lengths);
    Py_XDECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"pack_messages", pack_messages, METH_O,
     "pack_messages(rows: list[MessageRow]) -> (bytes, list[int]): the M records of the rows, one after the "
     "other, and each record's length with its head."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "broker.storage._segment", "The segment files' record packer in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__segment(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddStringConstant(m, "FIXED_FORMAT", FIXED_FORMAT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
