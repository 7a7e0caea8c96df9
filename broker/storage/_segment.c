/* The message segment files' record packer and writer in C: write_records(fd, parts, sync) packs a group
 * commit's message rows as segment_format's Python does (the ``M`` record: u32 length, u32 CRC-32, then kind,
 * key, expiry, flags, the four lengths and the bytes), byte for byte, and appends them with the commit's other
 * records; tests/unit/storage/test_segment_packer.py compares the two.
 *
 * Why C: the writer thread holds the GIL for every Python step of that loop, and the loop thread needs it for
 * everything else: per 1 KiB message ~0.8 us, half of it zlib's CRC-32, which the zlib module computes with
 * the GIL held below 5 KiB. Here the rows are read with the GIL (their strings' UTF-8, their buffers), then
 * the copies and the CRCs run with it released.
 *
 * And the whole append in one release of the GIL: the records packed, written with writev and fdatasynced.
 * Each release costs the writer a wait for the GIL afterwards (the loop thread holds it through a whole
 * callback, up to a millisecond under load): packing, writing and syncing one after the other, with os.writev
 * and os.fdatasync, took three such waits per commit, a third of the commit's time with 1,000 persistent
 * confirms in flight.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

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

/* CPython 3.11's PyLong_AsUnsignedLongLong and PyLong_AsLongLong convert any int above 2**30 (every message
 * key is) through _PyLong_AsByteArray, byte by byte: with the GIL held, that was a sixth of the writer's
 * index step. The long variants loop over the digits, and long is 64 bits where this is built (LP64). */
#if ULONG_MAX == 0xFFFFFFFFFFFFFFFFULL
#define AS_U64(o) PyLong_AsUnsignedLong(o)
#define AS_I64(o) PyLong_AsLong(o)
#else
#define AS_U64(o) PyLong_AsUnsignedLongLong(o)
#define AS_I64(o) PyLong_AsLongLong(o)
#endif

/* CRC-32 (zlib's: the reflected polynomial 0x04C11DB7, inverted in and out) by carry-less multiplication
 * where the CPU has it, zlib's crc32_z elsewhere: the same value, held equal to zlib.crc32 by
 * tests/unit/storage/test_segment_packer.py. zlib 1.2.13 computes it a byte-table step at a time: with 1,000
 * persistent 1 KiB confirms in flight that was a quarter of the writer thread's CPU, which the loop thread
 * and the load generator share two cores with.
 *
 * The folding is Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ Instruction" (Gopal
 * et al., 2009), in its bit-reflected form: four 128-bit lanes fold 64 bytes a step, then one lane 16, then
 * 128 bits fold to 64 and a Barrett reduction gives the 32-bit remainder. Its constants, for P(x) =
 * 0x104C11DB7, each reflected and shifted left by one: FOLD_4 = x^(4*128+32) and x^(4*128-32) mod P,
 * FOLD_1 = x^(128+32) and x^(128-32) mod P, FOLD_64 = x^64 mod P; BARRETT = P and floor(x^64 / P). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CRC_FOLDS 1

__attribute__((target("pclmul,sse4.1"))) static uint32_t crc32_fold(uint32_t crc, const unsigned char *buf,
                                                                     size_t len) {
    /* len >= 64 and a multiple of 16; crc is the inverted running value (zlib's internal form). */
    const __m128i fold_4 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
    const __m128i fold_1 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    const __m128i fold_64 = _mm_set_epi64x(0, 0x163cd6124);
    const __m128i barrett = _mm_set_epi64x(0x1f7011641, 0x1db710641);
    const __m128i low_32 = _mm_setr_epi32(~0, 0, ~0, 0);
    __m128i lane[4];
    for (int i = 0; i < 4; i++) lane[i] = _mm_loadu_si128((const __m128i *)(buf + 16 * i));
    lane[0] = _mm_xor_si128(lane[0], _mm_cvtsi32_si128((int)crc));
    buf += 64;
    len -= 64;
    for (; len >= 64; buf += 64, len -= 64) {
        for (int i = 0; i < 4; i++) {
            __m128i low = _mm_clmulepi64_si128(lane[i], fold_4, 0x00);
            __m128i high = _mm_clmulepi64_si128(lane[i], fold_4, 0x11);
            __m128i next = _mm_loadu_si128((const __m128i *)(buf + 16 * i));
            lane[i] = _mm_xor_si128(_mm_xor_si128(low, high), next);
        }
    }
    __m128i x = lane[0];
    for (int i = 1; i < 4; i++) {
        __m128i low = _mm_clmulepi64_si128(x, fold_1, 0x00);
        __m128i high = _mm_clmulepi64_si128(x, fold_1, 0x11);
        x = _mm_xor_si128(_mm_xor_si128(low, high), lane[i]);
    }
    for (; len >= 16; buf += 16, len -= 16) {
        __m128i low = _mm_clmulepi64_si128(x, fold_1, 0x00);
        __m128i high = _mm_clmulepi64_si128(x, fold_1, 0x11);
        x = _mm_xor_si128(_mm_xor_si128(low, high), _mm_loadu_si128((const __m128i *)buf));
    }
    /* 128 bits to 64 */
    __m128i t = _mm_clmulepi64_si128(x, fold_1, 0x10);
    x = _mm_xor_si128(_mm_srli_si128(x, 8), t);
    t = _mm_srli_si128(x, 4);
    x = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x, low_32), fold_64, 0x00), t);
    /* Barrett reduction to 32 bits */
    t = _mm_clmulepi64_si128(_mm_and_si128(x, low_32), barrett, 0x10);
    t = _mm_clmulepi64_si128(_mm_and_si128(t, low_32), barrett, 0x00);
    return (uint32_t)_mm_extract_epi32(_mm_xor_si128(x, t), 1);
}

static int crc_folds = -1; /* the CPU has PCLMULQDQ and SSE4.1: set at import */
#endif

static uint32_t crc32_of(uint32_t crc, const unsigned char *buf, size_t len) {
#ifdef CRC_FOLDS
    if (len >= 64 && crc_folds > 0) {
        size_t folded = len & ~(size_t)15;
        crc = ~crc32_fold(~crc, buf, folded);
        buf += folded;
        len -= folded;
    }
#endif
    return (uint32_t)crc32_z(crc, buf, len);
}

/* Reads one row into item (GIL held): 0, or -1 with an exception set. */
static int read_row(PyObject *row, Item *item, Py_ssize_t *payload) {
    if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 7) {
        PyErr_SetString(PyExc_TypeError, "a message row is a tuple of 7");
        return -1;
    }
    item->key = AS_U64(PyTuple_GET_ITEM(row, 0));
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
        item->expires = AS_I64(expires);
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
    put32(out, (uint32_t)payload);
    put32(out + 4, crc32_of(0, out + HEAD_SIZE, (size_t)payload));
    return p;
}

/* The length of a bytes-like object: bytes directly, anything else through the buffer protocol; -1 with an
 * exception set. */
static Py_ssize_t bytes_length(PyObject *object) {
    if (PyBytes_CheckExact(object)) return PyBytes_GET_SIZE(object);
    Py_buffer view;
    if (PyObject_GetBuffer(object, &view, PyBUF_SIMPLE) < 0) return -1;
    Py_ssize_t n = view.len;
    PyBuffer_Release(&view);
    return n;
}

/* One row's record length with its head: only what the length depends on (the names' UTF-8, the header's and
 * the body's sizes), with read_row's limits; write_records reads and checks the whole row before writing
 * anything. -1 with an exception set. */
static Py_ssize_t row_length(PyObject *row) {
    if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 7) {
        PyErr_SetString(PyExc_TypeError, "a message row is a tuple of 7");
        return -1;
    }
    Py_ssize_t exchange_n, routing_n;
    if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(row, 1), &exchange_n) == NULL) return -1;
    if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(row, 2), &routing_n) == NULL) return -1;
    if (exchange_n > 0xFFFF || routing_n > 0xFFFF) {
        PyErr_SetString(PyExc_ValueError, "exchange or routing key longer than 65535 bytes");
        return -1;
    }
    Py_ssize_t header_n = bytes_length(PyTuple_GET_ITEM(row, 3));
    if (header_n < 0) return -1;
    Py_ssize_t body_n = bytes_length(PyTuple_GET_ITEM(row, 4));
    if (body_n < 0) return -1;
    if (header_n > 0xFFFFFFFFLL || body_n > 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_ValueError, "header or body longer than 4 GiB");
        return -1;
    }
    Py_ssize_t payload = FIXED_SIZE + exchange_n + routing_n + header_n + body_n;
    if (payload > 0xFFFFFFFFLL) {
        PyErr_SetString(PyExc_ValueError, "record longer than 4 GiB");
        return -1;
    }
    return HEAD_SIZE + payload;
}

/* record_lengths(rows): each row's record length with its head, as segment_format.pack_messages_py packs
 * them. The writer thread calls it with the GIL held, for every message: it reads no more of a row than the
 * length needs. With read_row (buffers taken and released, the key converted) it took 96 ns a row, 18 ns now
 * (500 rows of 1 KiB, timeit). */
static PyObject *record_lengths(PyObject *module, PyObject *rows) {
    if (!PyList_Check(rows)) {
        PyErr_SetString(PyExc_TypeError, "rows must be a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(rows);
    PyObject *lengths = PyList_New(n);
    if (lengths == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t length = row_length(PyList_GET_ITEM(rows, i));
        PyObject *boxed = length < 0 ? NULL : PyLong_FromSsize_t(length);
        if (boxed == NULL) {
            Py_DECREF(lengths);
            return NULL;
        }
        PyList_SET_ITEM(lengths, i, boxed);
    }
    return lengths;
}

/* Writes every iovec, however many (IOV_MAX at a time) and however short each write (GIL released): 0, or
 * the errno. The iovecs are consumed. */
static int write_all(int fd, struct iovec *iov, Py_ssize_t n) {
    Py_ssize_t first = 0;
    while (first < n) {
        if (iov[first].iov_len == 0) {
            first++;
            continue;
        }
        int count = (int)((n - first) < IOV_MAX ? (n - first) : IOV_MAX);
        ssize_t written = writev(fd, iov + first, count);
        if (written < 0) {
            if (errno == EINTR) continue;
            return errno;
        }
        while (written > 0) {
            if ((size_t)written >= iov[first].iov_len) {
                written -= (ssize_t)iov[first].iov_len;
                iov[first].iov_len = 0;
                first++;
            } else {
                iov[first].iov_base = (char *)iov[first].iov_base + written;
                iov[first].iov_len -= (size_t)written;
                written = 0;
            }
        }
    }
    return 0;
}

/* The packing buffer, kept from one commit to the next (GIL held while taken and kept; the writer thread is
 * its only user, and a second caller meanwhile would simply allocate its own). A fresh malloc of a commit's
 * size came back as fresh pages each time: a page fault and the kernel zeroing each 4 KiB of it, on the
 * writer thread, for every commit. Up to SPARE_MAX bytes are kept (a commit of 1,000 1 KiB messages is 1 MiB). */
#define SPARE_MAX ((size_t)16 << 20)
static unsigned char *spare = NULL;
static size_t spare_capacity = 0;

static unsigned char *take_buffer(Py_ssize_t size, size_t *capacity) {
    size_t wanted = (size_t)(size ? size : 1);
    if (spare != NULL && spare_capacity >= wanted) {
        unsigned char *buffer = spare;
        *capacity = spare_capacity;
        spare = NULL;
        spare_capacity = 0;
        return buffer;
    }
    *capacity = wanted;
    return PyMem_RawMalloc(wanted);
}

static void keep_buffer(unsigned char *buffer, size_t capacity) {
    if (capacity > SPARE_MAX || (spare != NULL && spare_capacity >= capacity)) {
        PyMem_RawFree(buffer);
        return;
    }
    PyMem_RawFree(spare);
    spare = buffer;
    spare_capacity = capacity;
}

static PyObject *write_records(PyObject *module, PyObject *args) {
    int fd, sync;
    PyObject *parts;
    if (!PyArg_ParseTuple(args, "iO!p:write_records", &fd, &PyList_Type, &parts, &sync)) return NULL;
    Py_ssize_t n_parts = PyList_GET_SIZE(parts), n_rows = 0;
    for (Py_ssize_t i = 0; i < n_parts; i++) {
        PyObject *part = PyList_GET_ITEM(parts, i);
        if (PyList_Check(part)) n_rows += PyList_GET_SIZE(part);
    }
    Item *items = PyMem_Calloc((size_t)(n_rows ? n_rows : 1), sizeof(Item));
    Py_ssize_t *payloads = PyMem_Calloc((size_t)(n_rows ? n_rows : 1), sizeof(Py_ssize_t));
    Py_buffer *views = PyMem_Calloc((size_t)(n_parts ? n_parts : 1), sizeof(Py_buffer));
    struct iovec *iov = PyMem_Calloc((size_t)(n_parts ? n_parts : 1), sizeof(struct iovec));
    unsigned char *packed = NULL;
    Py_ssize_t n_items = 0, n_views = 0, packed_size = 0, total = 0;
    size_t packed_capacity = 0;
    PyObject *result = NULL;
    if (items == NULL || payloads == NULL || views == NULL || iov == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* With the GIL: every part's buffer and every row read, and where each packed run of rows goes. */
    for (Py_ssize_t i = 0; i < n_parts; i++) {
        PyObject *part = PyList_GET_ITEM(parts, i);
        if (PyList_Check(part)) {
            Py_ssize_t size = 0;
            for (Py_ssize_t j = 0; j < PyList_GET_SIZE(part); j++) {
                if (read_row(PyList_GET_ITEM(part, j), &items[n_items], &payloads[n_items]) < 0) {
                    n_items++; /* its buffers, if any, are released below */
                    goto done;
                }
                size += HEAD_SIZE + payloads[n_items++];
            }
            iov[i].iov_base = (void *)(uintptr_t)packed_size; /* an offset until the buffer exists */
            iov[i].iov_len = (size_t)size;
            packed_size += size;
        } else {
            if (PyObject_GetBuffer(part, &views[n_views], PyBUF_SIMPLE) < 0) goto done;
            iov[i].iov_base = views[n_views].buf;
            iov[i].iov_len = (size_t)views[n_views].len;
            n_views++;
        }
        total += (Py_ssize_t)iov[i].iov_len;
    }
    packed = take_buffer(packed_size, &packed_capacity);
    if (packed == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_parts; i++) {
        if (PyList_Check(PyList_GET_ITEM(parts, i))) iov[i].iov_base = packed + (uintptr_t)iov[i].iov_base;
    }
    /* The lists are the caller's own, and each row, string and buffer held: nothing moves meanwhile. */
    int error = 0;
    Py_BEGIN_ALLOW_THREADS
    unsigned char *p = packed;
    for (Py_ssize_t i = 0; i < n_items; i++) p = write_record(p, &items[i], payloads[i]);
    error = write_all(fd, iov, n_parts);
    if (error == 0 && sync && fdatasync(fd) < 0) error = errno;
    Py_END_ALLOW_THREADS
    if (error != 0) {
        errno = error;
        PyErr_SetFromErrno(PyExc_OSError);
        goto done;
    }
    result = PyLong_FromSsize_t(total);
done:
    if (items != NULL) {
        for (Py_ssize_t i = 0; i < n_items; i++) {
            if (items[i].buffers > 0) PyBuffer_Release(&items[i].header);
            if (items[i].buffers > 1) PyBuffer_Release(&items[i].body);
        }
        PyMem_Free(items);
    }
    if (views != NULL) {
        for (Py_ssize_t i = 0; i < n_views; i++) PyBuffer_Release(&views[i]);
        PyMem_Free(views);
    }
    PyMem_Free(payloads);
    PyMem_Free(iov);
    if (packed != NULL) keep_buffer(packed, packed_capacity);
    return result;
}

/* crc32(data, value=0): zlib.crc32's value, by crc32_of, with the GIL released from 64 KiB on (recovery
 * checks whole segments' records with it). */
static PyObject *py_crc32(PyObject *module, PyObject *args) {
    Py_buffer data;
    unsigned int value = 0;
    if (!PyArg_ParseTuple(args, "y*|I:crc32", &data, &value)) return NULL;
    uint32_t crc;
    if (data.len >= 65536) {
        Py_BEGIN_ALLOW_THREADS
        crc = crc32_of(value, data.buf, (size_t)data.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = crc32_of(value, data.buf, (size_t)data.len);
    }
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(crc);
}

static PyMethodDef methods[] = {
    {"crc32", py_crc32, METH_VARARGS, "crc32(data: Buffer, value: int = 0) -> int: zlib.crc32's value."},
    {"record_lengths", record_lengths, METH_O,
     "record_lengths(rows: list[MessageRow]) -> list[int]: each row's record length with its head."},
    {"write_records", write_records, METH_VARARGS,
     "write_records(fd: int, parts: list[bytes | list[MessageRow]], sync: bool) -> int: the parts written in "
     "order (a list of rows as their packed records) and, if sync, fdatasynced, in one release of the GIL; "
     "the bytes written."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "broker.storage._segment", "The segment files' record packer and writer in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__segment(void) {
#ifdef CRC_FOLDS
    __builtin_cpu_init();
    crc_folds = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#endif
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    int carryless = 0;
#ifdef CRC_FOLDS
    carryless = crc_folds;
#endif
    /* Whether crc32_of folds by carry-less multiplication here (the tests say which path they held equal). */
    if (PyModule_AddIntConstant(m, "CRC_CARRYLESS", carryless) < 0 ||
        PyModule_AddStringConstant(m, "FIXED_FORMAT", FIXED_FORMAT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
