/* The two per-message wire loops in C: splitting received bytes into frames, and building a delivery.
 *
 * Why C: publish -> consume spent ~38% of the broker's time in the frame loop (docs/benchmarks.md, "Profile
 * of the consume path"): a slice and a tuple per frame, then three trips through the session (method, header,
 * body) and the content assembler for one message. `scan` does the framing of protocol/framing.py's
 * FrameBuffer.feed and hands a publish whose method, header and single body frame arrived together on one
 * channel as ONE item, so the session handles it in one call. `encode_basic_deliver_content` is
 * protocol/fastpath.py's function of that name, built straight into one bytes object.
 *
 * Only the well-formed common case is done here. `scan` stops at the first frame it does not accept
 * (oversized, bad frame-end, unknown type, short payload) and returns its position: FrameBuffer.feed's Python
 * loop carries on from there and raises RabbitMQ's error, so the error texts live in one place. The pure
 * modules stay the reference: tests/property/test_wire_native.py compares both on generated streams.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define FRAME_METHOD 1
#define FRAME_HEADER 2
#define FRAME_BODY 3
#define FRAME_HEARTBEAT 8
#define FRAME_END 0xCE
/* The item type of a grouped publish: (FRAME_PUBLISH, channel, (method, header, body)). */
#define FRAME_PUBLISH 0
/* A decoded basic.ack: (FRAME_ACK, channel, delivery_tag), (FRAME_ACK_MULTIPLE, channel, delivery_tag). */
#define FRAME_ACK (-1)
#define FRAME_ACK_MULTIPLE (-2)

static inline uint16_t be16(const unsigned char *p) { return (uint16_t)((p[0] << 8) | p[1]); }

static inline uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline uint64_t be64(const unsigned char *p) { return ((uint64_t)be32(p) << 32) | be32(p + 4); }

static inline void put16(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 8);
    p[1] = (unsigned char)v;
}

static inline void put32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

/* The frame at `pos` if it is complete and passes FrameBuffer.feed's checks: its payload size, else -1. */
static Py_ssize_t accepted(const unsigned char *d, Py_ssize_t n, Py_ssize_t pos, uint64_t limit, int *type,
                           uint16_t *channel) {
    if (n - pos < 7) return -1;
    uint32_t size = be32(d + pos + 3);
    if (size > limit) return -1;
    Py_ssize_t end = pos + 7 + (Py_ssize_t)size;
    if (end >= n || d[end] != FRAME_END) return -1;
    int t = d[pos];
    /* analyze_frame/2's minimum payloads (protocol/framing.py _MIN_PAYLOAD); a heartbeat is empty. */
    if ((t == FRAME_METHOD && size < 4) || (t == FRAME_HEADER && size < 12) || (t == FRAME_HEARTBEAT && size) ||
        (t != FRAME_METHOD && t != FRAME_HEADER && t != FRAME_BODY && t != FRAME_HEARTBEAT))
        return -1;
    *type = t;
    *channel = be16(d + pos + 1);
    return (Py_ssize_t)size;
}

/* A 3-tuple of three new references; if any is NULL (a failed allocation), all are released and NULL is
 * returned, so callers can pass constructors straight in. */
static PyObject *triple(PyObject *a, PyObject *b, PyObject *c) {
    PyObject *tuple = a != NULL && b != NULL && c != NULL ? PyTuple_New(3) : NULL;
    if (tuple == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(c);
        return NULL;
    }
    PyTuple_SET_ITEM(tuple, 0, a);
    PyTuple_SET_ITEM(tuple, 1, b);
    PyTuple_SET_ITEM(tuple, 2, c);
    return tuple;
}

static PyObject *item(long type, long channel, PyObject *payload) {
    return triple(PyLong_FromLong(type), PyLong_FromLong(channel), payload);
}

static PyObject *slice(const unsigned char *d, Py_ssize_t start, Py_ssize_t size) {
    return PyBytes_FromStringAndSize((const char *)d + start, size);
}

/* scan(data: bytes, pos: int, limit: int) -> (items, pos)
 *
 * Items are FrameBuffer's (frame_type, channel, payload) tuples, except that a basic.publish method frame
 * followed at once by its content header (class 60, weight 0) and, for a non-empty body, exactly one body
 * frame holding the whole body, all on the same channel (not 0), is one (0, channel, (method, header, body)). `pos`
 * A basic.ack method frame (13 bytes, bits 0 or 1, not on channel 0) is (FRAME_ACK or FRAME_ACK_MULTIPLE,
 * channel, delivery_tag). `pos` is where scanning stopped: the end of the data, an incomplete frame, or a
 * frame the Python loop must judge.
 */
static PyObject *scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyBytes_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "scan(data: bytes, pos: int, limit: int)");
        return NULL;
    }
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t n = PyBytes_GET_SIZE(args[0]);
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    unsigned long long limit = PyLong_AsUnsignedLongLong(args[2]);
    if (PyErr_Occurred()) return NULL;
    if (pos < 0 || pos > n) {
        PyErr_SetString(PyExc_ValueError, "scan: pos out of range");
        return NULL;
    }
    PyObject *items = PyList_New(0);
    if (items == NULL) return NULL;
    for (;;) {
        int type;
        uint16_t channel;
        Py_ssize_t size = accepted(d, n, pos, limit, &type, &channel);
        if (size < 0) break;
        Py_ssize_t start = pos + 7;
        PyObject *entry = NULL;
        if (type == FRAME_METHOD && channel != 0 && d[start] == 0 && d[start + 1] == 60 && d[start + 2] == 0 &&
            d[start + 3] == 40) {
            Py_ssize_t hpos = start + size + 1;
            int htype;
            uint16_t hchannel;
            Py_ssize_t hsize = accepted(d, n, hpos, limit, &htype, &hchannel);
            const unsigned char *h = hsize >= 14 ? d + hpos + 7 : NULL; /* class, weight, body size, flags */
            if (h != NULL && htype == FRAME_HEADER && hchannel == channel && h[0] == 0 && h[1] == 60 &&
                h[2] == 0 && h[3] == 0) {
                uint64_t body_size = be64(h + 4);
                Py_ssize_t bpos = hpos + 7 + hsize + 1, next = -1, bsize = 0;
                if (body_size == 0) {
                    next = bpos;
                } else {
                    int btype;
                    uint16_t bchannel;
                    bsize = accepted(d, n, bpos, limit, &btype, &bchannel);
                    if (bsize >= 0 && btype == FRAME_BODY && bchannel == channel && (uint64_t)bsize == body_size)
                        next = bpos + 7 + bsize + 1;
                }
                if (next >= 0) {
                    PyObject *group =
                        triple(slice(d, start, size), slice(d, hpos + 7, hsize), slice(d, bpos + 7, bsize));
                    entry = item(FRAME_PUBLISH, channel, group);
                    if (entry == NULL) goto error;
                    pos = next;
                }
            }
        }
        if (entry == NULL && type == FRAME_METHOD && channel != 0 && size == 13 && d[start] == 0 &&
            d[start + 1] == 60 && d[start + 2] == 0 && d[start + 3] == 80 && d[start + 12] <= 1) {
            entry = item(d[start + 12] ? FRAME_ACK_MULTIPLE : FRAME_ACK, channel,
                         PyLong_FromUnsignedLongLong(be64(d + start + 4)));
            if (entry == NULL) goto error;
            pos = start + size + 1;
        }
        if (entry == NULL) {
            entry = item(type, channel, slice(d, start, size));
            if (entry == NULL) goto error;
            pos = start + size + 1;
        }
        int failed = PyList_Append(items, entry);
        Py_DECREF(entry);
        if (failed) goto error;
    }
    PyObject *result = PyTuple_New(2);
    PyObject *end = PyLong_FromSsize_t(pos);
    if (result == NULL || end == NULL) {
        Py_XDECREF(result);
        Py_XDECREF(end);
        goto error;
    }
    PyTuple_SET_ITEM(result, 0, items);
    PyTuple_SET_ITEM(result, 1, end);
    return result;
error:
    Py_DECREF(items);
    return NULL;
}

static int short_string(PyObject *value, const char **data, Py_ssize_t *size) {
    if (!PyUnicode_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "basic.deliver: expected str");
        return -1;
    }
    *data = PyUnicode_AsUTF8AndSize(value, size);
    if (*data == NULL) return -1;
    if (*size > 255) {
        PyErr_SetString(PyExc_ValueError, "basic.deliver short string longer than 255 bytes");
        return -1;
    }
    return 0;
}

/* encode_basic_deliver_content(channel, consumer_tag, delivery_tag, redelivered, exchange, routing_key,
 *                              header_payload, body, frame_max) -> bytes
 * The same bytes as protocol/fastpath.py's function of that name: basic.deliver, the content header, then the
 * body in frames of at most frame_max - 8 bytes (none for an empty body; one when frame_max is 0). */
static PyObject *encode_deliver(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 9 || !PyBytes_Check(args[6]) || !PyBytes_Check(args[7])) {
        PyErr_SetString(PyExc_TypeError,
                        "encode_basic_deliver_content(channel, consumer_tag, delivery_tag, redelivered, "
                        "exchange, routing_key, header_payload: bytes, body: bytes, frame_max)");
        return NULL;
    }
    long channel = PyLong_AsLong(args[0]);
    unsigned long long tag = PyLong_AsUnsignedLongLong(args[2]);
    int redelivered = PyObject_IsTrue(args[3]);
    long long frame_max = PyLong_AsLongLong(args[8]);
    if (PyErr_Occurred() || redelivered < 0) return NULL;
    if (channel < 0 || channel > 0xFFFF) {
        PyErr_SetString(PyExc_OverflowError, "channel out of range");
        return NULL;
    }
    const char *ct, *ex, *rk;
    Py_ssize_t lct, lex, lrk;
    if (short_string(args[1], &ct, &lct) || short_string(args[4], &ex, &lex) || short_string(args[5], &rk, &lrk))
        return NULL;
    const char *hp = PyBytes_AS_STRING(args[6]), *body = PyBytes_AS_STRING(args[7]);
    Py_ssize_t lhp = PyBytes_GET_SIZE(args[6]), size = PyBytes_GET_SIZE(args[7]);
    Py_ssize_t chunk = size;
    if (frame_max && size > frame_max - 8) chunk = (Py_ssize_t)(frame_max - 8);
    if (size && chunk <= 0) {
        PyErr_SetString(PyExc_ValueError, "frame_max too small for a body frame");
        return NULL;
    }
    Py_ssize_t frames = size ? (size + chunk - 1) / chunk : 0;
    Py_ssize_t method_size = 16 + lct + lex + lrk;
    Py_ssize_t total = 8 + method_size + 8 + lhp + frames * 8 + size;
    PyObject *out = PyBytes_FromStringAndSize(NULL, total);
    if (out == NULL) return NULL;
    unsigned char *p = (unsigned char *)PyBytes_AS_STRING(out);
    *p++ = FRAME_METHOD;
    put16(p, (uint32_t)channel);
    put32(p + 2, (uint32_t)method_size);
    put32(p + 6, 0x003C003C); /* basic.deliver (60, 60) */
    p += 10;
    *p++ = (unsigned char)lct;
    memcpy(p, ct, lct);
    p += lct;
    put32(p, (uint32_t)(tag >> 32));
    put32(p + 4, (uint32_t)tag);
    p += 8;
    *p++ = (unsigned char)(redelivered ? 1 : 0);
    *p++ = (unsigned char)lex;
    memcpy(p, ex, lex);
    p += lex;
    *p++ = (unsigned char)lrk;
    memcpy(p, rk, lrk);
    p += lrk;
    *p++ = FRAME_END;
    *p++ = FRAME_HEADER;
    put16(p, (uint32_t)channel);
    put32(p + 2, (uint32_t)lhp);
    p += 6;
    memcpy(p, hp, lhp);
    p += lhp;
    *p++ = FRAME_END;
    for (Py_ssize_t start = 0; start < size; start += chunk) {
        Py_ssize_t part = size - start < chunk ? size - start : chunk;
        *p++ = FRAME_BODY;
        put16(p, (uint32_t)channel);
        put32(p + 2, (uint32_t)part);
        p += 6;
        memcpy(p, body + start, part);
        p += part;
        *p++ = FRAME_END;
    }
    return out;
}

/* untrack(obj) -> obj: out of the cyclic collector's sight, as CPython takes a tuple or dict that holds only
 * atoms out of it. For objects that can never be part of a reference cycle (a published message and what it
 * holds: strings, bytes, numbers, the decoded header table); refcounting still frees them. A young collection
 * traverses every tracked object that lives through it, and a broker holding a backlog keeps every message:
 * with 1,000 persistent confirms in flight each collection took ~19 ms with the GIL held, 6.6% of the broker's
 * CPU, 1.8% with the messages untracked (perf/ab.py --gc). */
static PyObject *untrack(PyObject *module, PyObject *obj) {
    if (PyObject_GC_IsTracked(obj)) PyObject_GC_UnTrack(obj);
    Py_INCREF(obj);
    return obj;
}

static PyMethodDef methods[] = {
    {"untrack", untrack, METH_O, "untrack(obj) -> obj: the same object, no longer tracked by the collector."},
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL,
     "scan(data, pos, limit) -> (items, pos): complete frames from pos, a publish's frames grouped."},
    {"encode_basic_deliver_content", (PyCFunction)(void (*)(void))encode_deliver, METH_FASTCALL,
     "basic.deliver with its content header and body frames, as one bytes object."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "protocol._wire",
                                    "Native frame scanning and delivery encoding (see _wire.c).", -1, methods};

PyMODINIT_FUNC PyInit__wire(void) {
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddIntConstant(m, "FRAME_PUBLISH", FRAME_PUBLISH) < 0 ||
        PyModule_AddIntConstant(m, "FRAME_ACK", FRAME_ACK) < 0 ||
        PyModule_AddIntConstant(m, "FRAME_ACK_MULTIPLE", FRAME_ACK_MULTIPLE) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
