/* The journal's per-message lane in C: NativeLane mirrors broker/journal/lane.py's PyLane line by line.
 *
 * Why C: in Python the compact row of a delivery costs ~0.5 us on the loop thread (a bound-method call,
 * four dict lookups, a 15-argument struct.pack_into), which alone was ~7% of publish->consume throughput.
 * Here the same work is attribute reads through the type's slot descriptors and stores into the bytearray.
 * Anything rarer than the hot row (routing capture, unroutable publishes, full mode, rejections, a full
 * buffer, a string not yet interned in this batch) calls back into Python, so the two lanes share one
 * implementation of everything but the hot row. tests/unit/journal/test_lane.py compares their bytes.
 *
 * Row layout: schema.DELIVERIES as broker/journal/rows.py packs it, struct format DELIVERY_FORMAT
 * (little-endian, unpadded); lane.py refuses this module if the formats or CODES differ.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <time.h>

#define DELIVERY_FORMAT "<qiiqiiiqqqqbi"
#define ROW_SIZE 73
/* Vocabulary codes (rows.VOCABULARY): the outcomes this lane writes. */
#define CODE_ACK 5
#define CODE_NACK 6
#define CODE_REQUEUE 7

static PyObject *s_message, *s_journal, *s_message_id, *s_exchange, *s_routing_key, *s_body, *s_redelivered,
    *s_envelope, *s_queue, *s_data, *s_rows, *s_limit, *s_codes, *s_queues, *s_intern, *s_queue_codes,
    *s_published_rows, *s_full_delivered, *s_full_settled, *s_rejected, *s_deliveries_full, *s_expire;
static PyObject *time_ns; /* time.time_ns: the default clock, read here with clock_gettime */

/* The attributes read per message are __slots__ of exact, known Python classes (bind() names them). For
 * those, the value is read at the slot's offset, as the slot's member descriptor itself does, skipping the
 * generic lookup (type lookup, descriptor check, member_get), which was a third of the row's cost. Any other
 * type (a subclass, a test double), and everything before bind(), takes PyObject_GetAttr. */
typedef struct {
    PyTypeObject *type;
    Py_ssize_t offset;
    PyObject **name;
} Slot;

enum { M_JOURNAL, M_MESSAGE_ID, M_EXCHANGE, M_ROUTING_KEY, M_BODY, E_MESSAGE, E_REDELIVERED, D_ENVELOPE,
       D_QUEUE, R_ROWS, N_SLOTS };
static Slot slots[N_SLOTS] = {
    [M_JOURNAL] = {NULL, 0, &s_journal},         [M_MESSAGE_ID] = {NULL, 0, &s_message_id},
    [M_EXCHANGE] = {NULL, 0, &s_exchange},       [M_ROUTING_KEY] = {NULL, 0, &s_routing_key},
    [M_BODY] = {NULL, 0, &s_body},               [E_MESSAGE] = {NULL, 0, &s_message},
    [E_REDELIVERED] = {NULL, 0, &s_redelivered}, [D_ENVELOPE] = {NULL, 0, &s_envelope},
    [D_QUEUE] = {NULL, 0, &s_queue},             [R_ROWS] = {NULL, 0, &s_rows},
};

/* getattr(obj, name) for slot i: a new reference, or NULL with an exception. */
static inline PyObject *get(int i, PyObject *obj) {
    const Slot *slot = &slots[i];
    if (Py_TYPE(obj) == slot->type) {
        PyObject *value = *(PyObject **)((char *)obj + slot->offset);
        if (value != NULL) return Py_NewRef(value);
    }
    return PyObject_GetAttr(obj, *slot->name);
}

/* setattr(obj, name, value) for slot i; 0, or -1 with an exception. */
static inline int set(int i, PyObject *obj, PyObject *value) {
    const Slot *slot = &slots[i];
    if (Py_TYPE(obj) == slot->type) {
        PyObject **field = (PyObject **)((char *)obj + slot->offset);
        PyObject *old = *field;
        *field = Py_NewRef(value);
        Py_XDECREF(old);
        return 0;
    }
    return PyObject_SetAttr(obj, *slot->name, value);
}

/* Find slot i's offset in type: its attribute must be a writable __slots__ member descriptor. */
static int resolve(int i, PyObject *type) {
    Slot *slot = &slots[i];
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "bind() takes classes");
        return -1;
    }
    PyObject *descr = PyObject_GetAttr(type, *slot->name);
    if (descr == NULL) return -1;
    int ok = Py_IS_TYPE(descr, &PyMemberDescr_Type);
    PyMemberDef *member = ok ? ((PyMemberDescrObject *)descr)->d_member : NULL;
    ok = ok && member->type == T_OBJECT_EX && !(member->flags & READONLY);
    if (ok) slot->offset = member->offset;
    /* A class compiled by mypyc (the default build, see setup.py) exposes its attributes as getset
     * descriptors, not slot members: that slot stays unbound and PyObject_GetAttr serves it. */
    int getset = Py_IS_TYPE(descr, &PyGetSetDescr_Type);
    Py_DECREF(descr);
    if (!ok && !getset) {
        PyErr_Format(PyExc_TypeError, "%s.%U is not a writable __slots__ member", ((PyTypeObject *)type)->tp_name,
                     *slot->name);
        return -1;
    }
    Py_XSETREF(slot->type, ok ? (PyTypeObject *)Py_NewRef(type) : NULL);
    return 0;
}

/* bind(Message, Envelope, Delivery, RowBuffer) */
static PyObject *bind(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "bind() takes Message, Envelope, Delivery and RowBuffer");
        return NULL;
    }
    static const int owner_of[N_SLOTS] = {0, 0, 0, 0, 0, 1, 1, 2, 2, 3};
    for (int i = 0; i < N_SLOTS; i++)
        if (resolve(i, args[owner_of[i]]) < 0) return NULL;
    Py_RETURN_NONE;
}

typedef struct {
    PyObject_HEAD
    PyObject *owner;      /* the JournalRecorder: LaneOwner */
    PyObject *deliveries; /* the current deliveries RowBuffer */
    PyObject *data;       /* ...its bytearray, codes and queues dicts, cached when it is set */
    PyObject *codes;
    PyObject *queues;
    Py_ssize_t limit;
    PyObject *clock;
    PyObject *call_soon; /* None without a loop */
    PyObject *ids;
    PyObject *rng;
    PyObject *inflight; /* dict: Envelope -> deliver time */
    PyObject *expire_cb;
    PyObject *mark; /* the last (publish_ns, fanout) given: shared by a loop iteration's publishes */
    long long mark_now;
    Py_ssize_t mark_fanout;
    double sample;
    long long now;
    char sampling, full, quiet, native_clock;
} Lane;

static inline void put_i64(char *p, long long value) {
    uint64_t u = (uint64_t)value;
    for (int i = 0; i < 8; i++) p[i] = (char)(u >> (8 * i));
}

static inline void put_i32(char *p, long value) {
    uint32_t u = (uint32_t)value;
    for (int i = 0; i < 4; i++) p[i] = (char)(u >> (8 * i));
}

/* Read the clock (ns): clock_gettime for time.time_ns, else the injected Python clock. -1 on error. */
static long long read_clock(Lane *self) {
    if (self->native_clock) {
        struct timespec ts;
        if (clock_gettime(CLOCK_REALTIME, &ts) != 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            return -1;
        }
        return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    }
    PyObject *value = PyObject_CallNoArgs(self->clock);
    if (value == NULL) return -1;
    long long now = PyLong_AsLongLong(value);
    Py_DECREF(value);
    if (now == -1 && PyErr_Occurred()) return -1;
    return now;
}

/* PyLane.tick: read the clock; on a loop keep the reading until call_soon runs expire. */
static long long tick(Lane *self) {
    long long now = read_clock(self);
    if (now == -1 && PyErr_Occurred()) return -1;
    if (self->call_soon != Py_None) {
        self->now = now;
        if (self->expire_cb == NULL) {
            self->expire_cb = PyObject_GetAttr((PyObject *)self, s_expire);
            if (self->expire_cb == NULL) return -1;
        }
        PyObject *handle = PyObject_CallOneArg(self->call_soon, self->expire_cb);
        if (handle == NULL) return -1;
        Py_DECREF(handle);
    }
    return now;
}

static int set_deliveries(Lane *self, PyObject *buffer, void *closure) {
    if (buffer == NULL) {
        PyErr_SetString(PyExc_AttributeError, "deliveries cannot be deleted");
        return -1;
    }
    PyObject *data = PyObject_GetAttr(buffer, s_data);
    PyObject *codes = data ? PyObject_GetAttr(buffer, s_codes) : NULL;
    PyObject *queues = codes ? PyObject_GetAttr(buffer, s_queues) : NULL;
    PyObject *limit = queues ? PyObject_GetAttr(buffer, s_limit) : NULL;
    Py_ssize_t limit_value = limit ? PyLong_AsSsize_t(limit) : -1;
    Py_XDECREF(limit);
    if (limit_value == -1 && PyErr_Occurred()) goto fail;
    if (!PyByteArray_Check(data) || !PyDict_Check(codes) || !PyDict_Check(queues)) {
        PyErr_SetString(PyExc_TypeError, "deliveries must be a RowBuffer of the deliveries table");
        goto fail;
    }
    Py_INCREF(buffer);
    Py_XSETREF(self->deliveries, buffer);
    Py_XSETREF(self->data, data);
    Py_XSETREF(self->codes, codes);
    Py_XSETREF(self->queues, queues);
    self->limit = limit_value;
    return 0;
fail:
    Py_XDECREF(data);
    Py_XDECREF(codes);
    Py_XDECREF(queues);
    return -1;
}

static PyObject *get_deliveries(Lane *self, void *closure) { return Py_NewRef(self->deliveries); }

/* The code of a string in the current batch: codes.get(value) or buffer.intern(value). -1 on error. */
static long code_of(Lane *self, PyObject *value) {
    PyObject *code = PyDict_GetItemWithError(self->codes, value); /* borrowed */
    if (code != NULL) return PyLong_AsLong(code);
    if (PyErr_Occurred()) return -1;
    PyObject *added = PyObject_CallMethodOneArg(self->deliveries, s_intern, value);
    if (added == NULL) return -1;
    long result = PyLong_AsLong(added);
    Py_DECREF(added);
    return result;
}

static long long attr_i64(int slot, PyObject *object) {
    PyObject *value = get(slot, object);
    if (value == NULL) return -1;
    long long result = PyLong_AsLongLong(value);
    Py_DECREF(value);
    return result;
}

/* PyLane._row: one compact deliveries row. 0 on success, -1 on error. */
static int row(Lane *self, long long now, long outcome, PyObject *queue, PyObject *envelope, PyObject *message,
               PyObject *mark, long long deliver_ts, long reason) {
    if (!PyTuple_CheckExact(mark) || PyTuple_GET_SIZE(mark) != 2) {
        PyErr_SetString(PyExc_TypeError, "Message.journal must be (publish_ns, fanout)");
        return -1;
    }
    long long publish_ts = PyLong_AsLongLong(PyTuple_GET_ITEM(mark, 0));
    long long fanout = PyLong_AsLongLong(PyTuple_GET_ITEM(mark, 1));
    if (PyErr_Occurred()) return -1;

    PyObject *pair = PyDict_GetItemWithError(self->queues, queue); /* borrowed: (vhost code, name code) */
    PyObject *owned_pair = NULL;
    if (pair == NULL) {
        if (PyErr_Occurred()) return -1;
        pair = owned_pair = PyObject_CallMethodOneArg(self->deliveries, s_queue_codes, queue);
        if (pair == NULL) return -1;
    }
    long vhost_code = -1, queue_code = -1;
    if (PyTuple_Check(pair) && PyTuple_GET_SIZE(pair) == 2) {
        vhost_code = PyLong_AsLong(PyTuple_GET_ITEM(pair, 0));
        queue_code = PyLong_AsLong(PyTuple_GET_ITEM(pair, 1));
    } else {
        PyErr_SetString(PyExc_TypeError, "queue codes must be a pair");
    }
    Py_XDECREF(owned_pair);
    if (PyErr_Occurred()) return -1;

    PyObject *exchange = get(M_EXCHANGE, message);
    if (exchange == NULL) return -1;
    long exchange_code = code_of(self, exchange);
    Py_DECREF(exchange);
    if (exchange_code == -1 && PyErr_Occurred()) return -1;
    PyObject *routing_key = get(M_ROUTING_KEY, message);
    if (routing_key == NULL) return -1;
    long routing_key_code = code_of(self, routing_key);
    Py_DECREF(routing_key);
    if (routing_key_code == -1 && PyErr_Occurred()) return -1;

    long long message_id = attr_i64(M_MESSAGE_ID, message);
    if (message_id == -1 && PyErr_Occurred()) return -1;
    PyObject *body = get(M_BODY, message);
    if (body == NULL) return -1;
    Py_ssize_t body_size = PyObject_Size(body);
    Py_DECREF(body);
    if (body_size < 0) return -1;
    PyObject *redelivered_obj = get(E_REDELIVERED, envelope);
    if (redelivered_obj == NULL) return -1;
    int redelivered = PyObject_IsTrue(redelivered_obj);
    Py_DECREF(redelivered_obj);
    if (redelivered < 0) return -1;

    PyObject *buffer = self->deliveries;
    Py_INCREF(buffer); /* the owner may replace it below */
    Py_ssize_t rows = (Py_ssize_t)attr_i64(R_ROWS, buffer);
    if (rows == -1 && PyErr_Occurred()) goto fail;
    if (rows < 0 || (rows + 1) * ROW_SIZE > PyByteArray_GET_SIZE(self->data)) {
        PyErr_SetString(PyExc_IndexError, "the deliveries buffer is full");
        goto fail;
    }
    char *p = PyByteArray_AS_STRING(self->data) + rows * ROW_SIZE;
    put_i64(p, now);
    put_i32(p + 8, outcome);
    put_i32(p + 12, vhost_code);
    put_i64(p + 16, message_id);
    put_i32(p + 24, exchange_code);
    put_i32(p + 28, routing_key_code);
    put_i32(p + 32, queue_code);
    put_i64(p + 36, fanout);
    put_i64(p + 44, (long long)body_size);
    put_i64(p + 52, publish_ts);
    put_i64(p + 60, deliver_ts);
    p[68] = (char)redelivered;
    put_i32(p + 69, reason);
    PyObject *count = PyLong_FromSsize_t(rows + 1);
    if (count == NULL || set(R_ROWS, buffer, count) < 0) {
        Py_XDECREF(count);
        goto fail;
    }
    Py_DECREF(count);
    Py_DECREF(buffer);
    if (rows + 1 >= self->limit) {
        PyObject *done = PyObject_CallMethodNoArgs(self->owner, s_deliveries_full);
        if (done == NULL) return -1;
        Py_DECREF(done);
    }
    return 0;
fail:
    Py_DECREF(buffer);
    return -1;
}

static PyObject *Lane_tick(Lane *self, PyObject *unused) {
    long long now = tick(self);
    if (now == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromLongLong(now);
}

static PyObject *Lane_expire(Lane *self, PyObject *unused) {
    self->now = 0;
    Py_RETURN_NONE;
}

/* published(vhost, message, queues, mandatory, channel, connection) */
static PyObject *Lane_published(Lane *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "published() takes 6 positional arguments");
        return NULL;
    }
    PyObject *message = args[1], *queues = args[2];
    if (self->sampling) {
        PyObject *draw = PyObject_CallNoArgs(self->rng);
        if (draw == NULL) return NULL;
        double value = PyFloat_AsDouble(draw);
        Py_DECREF(draw);
        if (value == -1.0 && PyErr_Occurred()) return NULL;
        if (value >= self->sample) Py_RETURN_NONE;
    }
    long long now = self->now ? self->now : tick(self);
    if (now == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t fanout = PyObject_Size(queues);
    if (fanout < 0) return NULL;
    /* Publishes of one loop iteration share the reading, and most have the same fan-out: one immutable mark
     * serves them all instead of a tuple and two ints per message. */
    PyObject *mark = self->mark;
    if (mark == NULL || self->mark_now != now || self->mark_fanout != fanout) {
        mark = PyTuple_New(2);
        if (mark == NULL) return NULL;
        PyObject *now_item = PyLong_FromLongLong(now), *fanout_item = PyLong_FromSsize_t(fanout);
        if (now_item == NULL || fanout_item == NULL) {
            Py_XDECREF(now_item);
            Py_XDECREF(fanout_item);
            Py_DECREF(mark);
            return NULL;
        }
        PyTuple_SET_ITEM(mark, 0, now_item);
        PyTuple_SET_ITEM(mark, 1, fanout_item);
        Py_XSETREF(self->mark, mark);
        self->mark_now = now, self->mark_fanout = fanout;
    }
    if (set(M_JOURNAL, message, mark) < 0) return NULL;
    PyObject *seq = PyIter_Next(self->ids);
    if (seq == NULL) {
        if (!PyErr_Occurred()) PyErr_SetNone(PyExc_StopIteration);
        return NULL;
    }
    int failed = set(M_MESSAGE_ID, message, seq);
    Py_DECREF(seq);
    if (failed < 0) return NULL;
    if (fanout && self->quiet) Py_RETURN_NONE;
    PyObject *now_obj = PyLong_FromLongLong(now);
    if (now_obj == NULL) return NULL;
    PyObject *call[8] = {self->owner, now_obj, args[0], args[1], args[2], args[3], args[4], args[5]};
    PyObject *result = PyObject_VectorcallMethod(s_published_rows, call, 8 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    Py_DECREF(now_obj);
    return result;
}

/* delivered(queue, envelope, delivery_tag, no_ack) */
static PyObject *Lane_delivered(Lane *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "delivered() takes 4 positional arguments");
        return NULL;
    }
    PyObject *queue = args[0], *envelope = args[1];
    PyObject *message = get(E_MESSAGE, envelope);
    if (message == NULL) return NULL;
    PyObject *mark = get(M_JOURNAL, message);
    PyObject *result = NULL;
    if (mark == NULL) goto done;
    if (mark == Py_None) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    long long now = read_clock(self); /* read per delivery: see broker.journal.recorder */
    if (now == -1 && PyErr_Occurred()) goto done;
    if (self->full) {
        PyObject *now_obj = PyLong_FromLongLong(now);
        if (now_obj == NULL) goto done;
        PyObject *call[6] = {self->owner, now_obj, queue, envelope, args[2], args[3]};
        result = PyObject_VectorcallMethod(s_full_delivered, call, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(now_obj);
        goto done;
    }
    int no_ack = PyObject_IsTrue(args[3]);
    if (no_ack < 0) goto done;
    if (no_ack) {
        if (row(self, now, CODE_ACK, queue, envelope, message, mark, now, 0) == 0) result = Py_NewRef(Py_None);
    } else {
        PyObject *now_obj = PyLong_FromLongLong(now);
        if (now_obj == NULL) goto done;
        if (PyDict_SetItem(self->inflight, envelope, now_obj) == 0) result = Py_NewRef(Py_None);
        Py_DECREF(now_obj);
    }
done:
    Py_XDECREF(mark);
    Py_DECREF(message);
    return result;
}

/* One delivery of settled(); 0 on success, -1 on error. */
static int settle_one(Lane *self, PyObject *delivery, long outcome, long reason, int closed, int rejected) {
    PyObject *envelope = get(D_ENVELOPE, delivery);
    if (envelope == NULL) return -1;
    PyObject *message = get(E_MESSAGE, envelope);
    PyObject *mark = message ? get(M_JOURNAL, message) : NULL;
    PyObject *queue = NULL;
    int status = -1;
    if (mark == NULL) goto done;
    if (mark == Py_None) {
        status = 0;
        goto done;
    }
    long long now = closed ? read_clock(self) : (self->now ? self->now : tick(self));
    if (now == -1 && PyErr_Occurred()) goto done;
    queue = get(D_QUEUE, delivery);
    if (queue == NULL) goto done;
    PyObject *deliver_obj = PyDict_GetItemWithError(self->inflight, envelope); /* borrowed */
    if (deliver_obj != NULL) { /* one row per delivery attempt */
        long long deliver_ts = PyLong_AsLongLong(deliver_obj);
        if (deliver_ts == -1 && PyErr_Occurred()) goto done;
        if (PyDict_DelItem(self->inflight, envelope) < 0) goto done;
        if (row(self, now, outcome, queue, envelope, message, mark, deliver_ts, reason) < 0) goto done;
    } else if (PyErr_Occurred()) {
        goto done;
    }
    if (rejected) {
        PyObject *now_obj = PyLong_FromLongLong(now);
        if (now_obj == NULL) goto done;
        PyObject *call[4] = {self->owner, now_obj, queue, message};
        PyObject *result = PyObject_VectorcallMethod(s_rejected, call, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
        Py_DECREF(now_obj);
        if (result == NULL) goto done;
        Py_DECREF(result);
    }
    status = 0;
done:
    Py_XDECREF(queue);
    Py_XDECREF(mark);
    Py_XDECREF(message);
    Py_DECREF(envelope);
    return status;
}

/* settled(deliveries, requeue, closed) */
static PyObject *Lane_settled(Lane *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "settled() takes 3 positional arguments");
        return NULL;
    }
    if (self->full) {
        PyObject *call[4] = {self->owner, args[0], args[1], args[2]};
        return PyObject_VectorcallMethod(s_full_settled, call, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    PyObject *requeue = args[1];
    int closed = PyObject_IsTrue(args[2]);
    if (closed < 0) return NULL;
    long outcome, reason;
    if (closed) {
        outcome = CODE_REQUEUE, reason = 0;
    } else if (requeue == Py_None) {
        outcome = CODE_ACK, reason = 0;
    } else {
        int again = PyObject_IsTrue(requeue);
        if (again < 0) return NULL;
        outcome = CODE_NACK, reason = again ? CODE_REQUEUE : 0; /* reason "requeue" shares the code */
    }
    PyObject *deliveries = PySequence_Fast(args[0], "deliveries must be a sequence");
    if (deliveries == NULL) return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(deliveries);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *delivery = PySequence_Fast_GET_ITEM(deliveries, i);
        if (settle_one(self, delivery, outcome, reason, closed, requeue == Py_False) < 0) {
            Py_DECREF(deliveries);
            return NULL;
        }
    }
    Py_DECREF(deliveries);
    Py_RETURN_NONE;
}

static int Lane_init(Lane *self, PyObject *args, PyObject *kwds) {
    PyObject *owner, *deliveries, *clock, *call_soon, *ids, *rng;
    double sample;
    int full, quiet;
    static char *keywords[] = {"owner", "deliveries", "clock", "call_soon", "ids", "rng", "sample", "full",
                               "quiet", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOOOOOdpp:NativeLane", keywords, &owner, &deliveries, &clock,
                                     &call_soon, &ids, &rng, &sample, &full, &quiet))
        return -1;
    if (!PyIter_Check(ids)) {
        PyErr_SetString(PyExc_TypeError, "ids must be an iterator");
        return -1;
    }
    if (set_deliveries(self, deliveries, NULL) < 0) return -1;
    PyObject *inflight = PyDict_New();
    if (inflight == NULL) return -1;
    Py_XSETREF(self->inflight, inflight);
    Py_XSETREF(self->owner, Py_NewRef(owner));
    Py_XSETREF(self->clock, Py_NewRef(clock));
    Py_XSETREF(self->call_soon, Py_NewRef(call_soon));
    Py_XSETREF(self->ids, Py_NewRef(ids));
    Py_XSETREF(self->rng, Py_NewRef(rng));
    Py_CLEAR(self->expire_cb);
    self->sample = sample;
    self->sampling = sample < 1.0;
    self->full = (char)full;
    self->quiet = (char)quiet;
    self->native_clock = clock == time_ns;
    self->now = 0;
    return 0;
}

static int Lane_traverse(Lane *self, visitproc visit, void *arg) {
    Py_VISIT(self->owner);
    Py_VISIT(self->deliveries);
    Py_VISIT(self->data);
    Py_VISIT(self->codes);
    Py_VISIT(self->queues);
    Py_VISIT(self->clock);
    Py_VISIT(self->call_soon);
    Py_VISIT(self->ids);
    Py_VISIT(self->rng);
    Py_VISIT(self->inflight);
    Py_VISIT(self->expire_cb);
    Py_VISIT(self->mark);
    return 0;
}

static int Lane_clear(Lane *self) {
    Py_CLEAR(self->owner);
    Py_CLEAR(self->deliveries);
    Py_CLEAR(self->data);
    Py_CLEAR(self->codes);
    Py_CLEAR(self->queues);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->call_soon);
    Py_CLEAR(self->ids);
    Py_CLEAR(self->rng);
    Py_CLEAR(self->inflight);
    Py_CLEAR(self->expire_cb);
    Py_CLEAR(self->mark);
    return 0;
}

static void Lane_dealloc(Lane *self) {
    PyObject_GC_UnTrack(self);
    Lane_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Lane_methods[] = {
    {"tick", (PyCFunction)Lane_tick, METH_NOARGS, "Read the clock; on a loop keep the reading this iteration."},
    {"expire", (PyCFunction)Lane_expire, METH_NOARGS, "Forget this iteration's reading."},
    {"published", (PyCFunction)(void (*)(void))Lane_published, METH_FASTCALL, "JournalHook.published"},
    {"delivered", (PyCFunction)(void (*)(void))Lane_delivered, METH_FASTCALL, "JournalHook.delivered"},
    {"settled", (PyCFunction)(void (*)(void))Lane_settled, METH_FASTCALL, "JournalHook.settled"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef Lane_members[] = {
    {"now", T_LONGLONG, offsetof(Lane, now), 0, "this loop iteration's reading (ns); 0: read the clock"},
    {"inflight", T_OBJECT, offsetof(Lane, inflight), READONLY, "sampled deliveries -> deliver time"},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef Lane_getset[] = {
    {"deliveries", (getter)get_deliveries, (setter)set_deliveries, "the deliveries RowBuffer being filled", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject LaneType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "broker.journal._lane.NativeLane",
    .tp_doc = "The journal's per-message lane (broker.journal.lane.PyLane in C).",
    .tp_basicsize = sizeof(Lane),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Lane_init,
    .tp_dealloc = (destructor)Lane_dealloc,
    .tp_traverse = (traverseproc)Lane_traverse,
    .tp_clear = (inquiry)Lane_clear,
    .tp_methods = Lane_methods,
    .tp_members = Lane_members,
    .tp_getset = Lane_getset,
};

static PyMethodDef module_methods[] = {
    {"bind", (PyCFunction)(void (*)(void))bind, METH_FASTCALL,
     "bind(Message, Envelope, Delivery, RowBuffer): read their slots at their offsets."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef lane_module = {
    PyModuleDef_HEAD_INIT,
    .m_methods = module_methods,
    .m_name = "_lane",
    .m_doc = "The journal's per-message lane in C (see broker.journal.lane).",
    .m_size = -1,
};

#define INTERN(var, text) \
    if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL

PyMODINIT_FUNC PyInit__lane(void) {
    INTERN(s_message, "message");
    INTERN(s_journal, "journal");
    INTERN(s_message_id, "message_id");
    INTERN(s_exchange, "exchange");
    INTERN(s_routing_key, "routing_key");
    INTERN(s_body, "body");
    INTERN(s_redelivered, "redelivered");
    INTERN(s_envelope, "envelope");
    INTERN(s_queue, "queue");
    INTERN(s_data, "data");
    INTERN(s_rows, "rows");
    INTERN(s_limit, "limit");
    INTERN(s_codes, "codes");
    INTERN(s_queues, "queues");
    INTERN(s_intern, "intern");
    INTERN(s_queue_codes, "queue_codes");
    INTERN(s_published_rows, "published_rows");
    INTERN(s_full_delivered, "full_delivered");
    INTERN(s_full_settled, "full_settled");
    INTERN(s_rejected, "rejected");
    INTERN(s_deliveries_full, "deliveries_full");
    INTERN(s_expire, "expire");
    PyObject *time_module = PyImport_ImportModule("time");
    if (time_module == NULL) return NULL;
    time_ns = PyObject_GetAttrString(time_module, "time_ns");
    Py_DECREF(time_module);
    if (time_ns == NULL) return NULL;
    if (PyType_Ready(&LaneType) < 0) return NULL;
    PyObject *module = PyModule_Create(&lane_module);
    if (module == NULL) return NULL;
    PyObject *codes = Py_BuildValue("(iii)", CODE_ACK, CODE_NACK, CODE_REQUEUE);
    if (codes == NULL || PyModule_AddObjectRef(module, "NativeLane", (PyObject *)&LaneType) < 0 ||
        PyModule_AddStringConstant(module, "DELIVERY_FORMAT", DELIVERY_FORMAT) < 0 ||
        PyModule_AddObjectRef(module, "CODES", codes) < 0) {
        Py_XDECREF(codes);
        Py_DECREF(module);
        return NULL;
    }
    Py_DECREF(codes);
    return module;
}
