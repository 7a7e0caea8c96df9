/*
 * sink.c - the ceiling: the least work an AMQP 0-9-1 server can do for amqpperf's scenarios.
 *
 * A measuring instrument, not a broker. One process, one thread, epoll (level-triggered), non-blocking
 * sockets, a fixed read and write buffer per connection and no allocation per message. It speaks just
 * enough AMQP 0-9-1 for amqpperf (perf/amqpperf.c) and amqp-tools: the handshake, channel.open, the
 * declare/bind/delete/qos/consume/confirm.select methods answered with their -ok frames, and the message
 * flow of pub16, pubsub, ack1, ack50, fanout, fanout-lat and confirm at the lowest cost it can have:
 *
 *  - a publish is taken whole from the read buffer (method + header + body frames) and routed through a
 *    one-entry cache per channel, keyed by the raw exchange and routing-key bytes of the basic.publish:
 *    the scenarios publish the same key over and over, so routing is one memcmp;
 *  - to each consumer bound the sink writes a basic.deliver it builds in place and then copies the
 *    publisher's header and body frames verbatim (only the channel number patched), into the consumer's
 *    write buffer; every connection gets one write() per event-loop turn;
 *  - a queue without a consumer only counts (queue.declare-ok reports the count, which amqpperf's
 *    publish-only scenario waits for): no message is ever stored;
 *  - when a consumer has no credit (prefetch reached) or no room in its write buffer, the publisher is
 *    "stalled": the sink stops reading its socket, so the message waits in the publisher's kernel buffer
 *    instead of a queue here. Acks give the credit back and the publisher resumes. That is the cheapest
 *    queue there is, and what the scenarios mean by prefetch;
 *  - with confirms, every read turn that carried publishes ends with one basic.ack (multiple when it
 *    covers more than one): nothing is persisted, so a message is "safe" once routed.
 *
 * Shortcuts, each allowed because amqpperf never needs more (a broker would):
 *  - one consumer per queue (no round-robin), direct and fanout exchanges only (topic is refused with
 *    540 NOT_IMPLEMENTED), no mandatory returns, no TTL, no persistence, no authentication;
 *  - acks are assumed to settle in delivery order (amqpperf acks each tag in order, or multiple), so the
 *    unacked set of a consumer is a count, not a set; nack and reject drop the message (no requeue);
 *  - a publisher that also consumes with a prefetch on the same connection could stall on its own
 *    credit (its acks sit behind the publishes it is not reading); amqpperf uses separate connections;
 *  - errors a broker reports on a channel (404 and 406) close the whole connection here.
 *
 * Build: cc -O2 -o /tmp/csink perf/sink.c     Run: /tmp/csink PORT [HOST]   (perf/brokers/csink.sh)
 * On SIGTERM or SIGINT it prints one JSON line of counters to stderr and exits.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define RBUF_BYTES (256 * 1024)   /* one read() takes up to this; a whole message must fit */
#define OBUF_BYTES (1024 * 1024)  /* pending output per connection */
#define OBUF_RESERVE (64 * 1024)  /* kept free of deliveries, so control replies always fit */
#define DELIVER_MAX (12 + 255 + 8 + 1 + 512 + 1) /* basic.deliver frame, at most */
#define FRAME_MAX 131072
#define MAX_CHANNELS 16
#define MAX_QUEUES 256
#define MAX_EXCHANGES 64
#define MAX_BINDINGS 64
#define MAX_TARGETS 64
#define MAX_KEY 512 /* exchange + routing key, as the two shortstrs of basic.publish */
#define MAX_CONNS 8192

/* ------------------------------------------------------------------ */
/* big-endian helpers                                                  */
/* ------------------------------------------------------------------ */
static inline uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static inline uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }
static inline void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)(v >> 16)); put16(p + 2, (uint16_t)v); }
static inline void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)(v >> 32)); put32(p + 4, (uint32_t)v); }

/* ------------------------------------------------------------------ */
/* state                                                               */
/* ------------------------------------------------------------------ */
typedef struct {
  uint8_t len;
  char s[256]; /* NUL-terminated copy, for messages */
} sstr_t;

typedef struct conn conn_t;

typedef struct {
  int used;
  sstr_t name;
  uint64_t messages; /* published while no consumer was attached: counted, never stored */
  conn_t *consumer;  /* at most one */
  uint16_t consumer_ch;
} queue_t;

typedef struct {
  int queue;
  sstr_t key;
} binding_t;

typedef struct {
  int used, fanout;
  sstr_t name;
  int nbind;
  binding_t bind[MAX_BINDINGS];
} exchange_t;

typedef struct { /* the route of the last (exchange, routing key) a channel published to */
  uint64_t gen;  /* topology generation it was computed in */
  uint16_t keylen;
  uint8_t key[MAX_KEY];
  int n;
  int queue[MAX_TARGETS];
} route_t;

typedef struct {
  int open, confirm, consuming, no_ack, queue;
  uint16_t prefetch;             /* basic.qos prefetch-count, taken by the next basic.consume */
  uint16_t credit;               /* this channel's consumer's prefetch, 0 = unlimited */
  sstr_t ctag;
  uint64_t published, confirmed; /* publish sequence numbers in confirm mode */
  uint64_t delivery_tag, unacked;
  route_t route;
} channel_t;

struct conn {
  int fd;
  int got_header, dead, stalled, reading, want_out, dirty, close_after_flush, confirm_due;
  uint8_t *rbuf;
  size_t rpos, rlen;
  uint8_t *obuf;
  size_t opos, olen;
  channel_t ch[MAX_CHANNELS];
};

static queue_t g_queues[MAX_QUEUES];
static exchange_t g_exchanges[MAX_EXCHANGES];
static uint64_t g_gen = 1; /* bumped by every topology change: invalidates the route caches */
static uint64_t g_ctag_seq, g_qname_seq;
static int g_epfd;
static conn_t *g_dirty[MAX_CONNS], *g_stalled[MAX_CONNS], *g_dead[MAX_CONNS];
static int g_ndirty, g_nstalled, g_ndead, g_nconns;
static volatile sig_atomic_t g_stop;
static struct {
  uint64_t conns, published, delivered, counted, unroutable, ack_frames, acked, confirm_frames, confirmed;
  uint64_t stalls, reads, writes;
} st;

/* ------------------------------------------------------------------ */
/* connection bookkeeping                                              */
/* ------------------------------------------------------------------ */
static void arm(conn_t *c) {
  struct epoll_event ev = {.events = (c->reading ? EPOLLIN : 0) | (c->want_out ? EPOLLOUT : 0), .data.ptr = c};
  epoll_ctl(g_epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

static void mark_dirty(conn_t *c) {
  if (!c->dirty) { c->dirty = 1; g_dirty[g_ndirty++] = c; }
}

static void conn_close(conn_t *c) {
  if (c->dead) return;
  c->dead = 1;
  for (int i = 0; i < MAX_CHANNELS; i++)
    if (c->ch[i].consuming && g_queues[c->ch[i].queue].consumer == c) g_queues[c->ch[i].queue].consumer = NULL;
  for (int i = 0; i < g_nstalled; i++)
    if (g_stalled[i] == c) g_stalled[i--] = g_stalled[--g_nstalled];
  epoll_ctl(g_epfd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  g_dead[g_ndead++] = c; /* freed at the end of the turn: later events of this turn may still name it */
  g_nconns--;
}

static size_t out_free(const conn_t *c) { return OBUF_BYTES - (c->olen - c->opos); }

/* room for `need` more bytes at obuf + olen, compacting when the written prefix is in the way */
static uint8_t *out_reserve(conn_t *c, size_t need) {
  if (OBUF_BYTES - c->olen < need && c->opos) {
    memmove(c->obuf, c->obuf + c->opos, c->olen - c->opos);
    c->olen -= c->opos;
    c->opos = 0;
  }
  return OBUF_BYTES - c->olen < need ? NULL : c->obuf + c->olen;
}

static void flush(conn_t *c) {
  if (c->dead) return;
  if (c->olen > c->opos) {
    ssize_t w = write(c->fd, c->obuf + c->opos, c->olen - c->opos);
    st.writes++;
    if (w < 0 && errno != EAGAIN && errno != EINTR) { conn_close(c); return; }
    if (w > 0) c->opos += (size_t)w;
    if (c->opos == c->olen) c->opos = c->olen = 0;
  }
  int want = c->olen > c->opos;
  if (want != c->want_out) { c->want_out = want; arm(c); }
  if (!want && c->close_after_flush) conn_close(c);
}

/* ------------------------------------------------------------------ */
/* writing control frames                                              */
/* ------------------------------------------------------------------ */
typedef struct {
  uint8_t *b;
  size_t n;
} wr_t;
static void w8(wr_t *w, uint8_t v) { w->b[w->n++] = v; }
static void w16(wr_t *w, uint16_t v) { put16(w->b + w->n, v); w->n += 2; }
static void w32(wr_t *w, uint32_t v) { put32(w->b + w->n, v); w->n += 4; }
static void w64(wr_t *w, uint64_t v) { put64(w->b + w->n, v); w->n += 8; }
static void wbytes(wr_t *w, const void *p, size_t n) { memcpy(w->b + w->n, p, n); w->n += n; }
static void wsstr(wr_t *w, const sstr_t *s) { w8(w, s->len); wbytes(w, s->s, s->len); }
static void wcstr(wr_t *w, const char *s) { size_t l = strlen(s); w8(w, (uint8_t)l); wbytes(w, s, l); }
static void wlstr(wr_t *w, const char *s) { size_t l = strlen(s); w32(w, (uint32_t)l); wbytes(w, s, l); }

/* a method frame goes straight into the write buffer; replies are < 1 KiB and OBUF_RESERVE keeps room */
static int method_begin(conn_t *c, wr_t *w, uint16_t ch, uint16_t cls, uint16_t mth) {
  w->b = out_reserve(c, 1024);
  w->n = 0;
  if (!w->b) { conn_close(c); return 0; } /* a client that sends methods and never reads */
  w8(w, 1); w16(w, ch); w32(w, 0); w16(w, cls); w16(w, mth);
  return 1;
}
static void method_end(conn_t *c, wr_t *w) {
  put32(w->b + 3, (uint32_t)(w->n - 7));
  w8(w, 0xCE);
  c->olen += w->n;
  mark_dirty(c);
}

/* connection.close with a reply code, then the socket closes once it is written (amqpperf dies on the
   close frame, so waiting for close-ok buys nothing) */
__attribute__((format(printf, 5, 6))) static void conn_fail(conn_t *c, uint16_t code, uint16_t cls,
                                                            uint16_t mth, const char *fmt, ...) {
  char text[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  fprintf(stderr, "sink: closing a connection: %u %s\n", code, text);
  wr_t w;
  if (!method_begin(c, &w, 0, 10, 50)) return;
  w16(&w, code); wcstr(&w, text); w16(&w, cls); w16(&w, mth);
  method_end(c, &w);
  c->close_after_flush = 1;
  c->reading = 0;
  arm(c);
}

/* ------------------------------------------------------------------ */
/* reading method arguments (cold path)                                */
/* ------------------------------------------------------------------ */
typedef struct {
  const uint8_t *p, *end;
  int bad;
} rd_t;
static uint8_t r8(rd_t *r) {
  if (r->p + 1 > r->end) { r->bad = 1; return 0; }
  return *r->p++;
}
static uint16_t r16(rd_t *r) { uint16_t hi = r8(r); return (uint16_t)(hi << 8 | r8(r)); }
static void rsstr(rd_t *r, sstr_t *s) {
  uint8_t l = r8(r);
  s->len = 0;
  s->s[0] = 0;
  if (r->p + l > r->end) { r->bad = 1; return; }
  s->len = l;
  memcpy(s->s, r->p, l);
  s->s[l] = 0;
  r->p += l;
}
static int sstr_eq(const sstr_t *a, const sstr_t *b) { return a->len == b->len && !memcmp(a->s, b->s, a->len); }

/* ------------------------------------------------------------------ */
/* topology (cold path: linear tables, a few dozen entries)            */
/* ------------------------------------------------------------------ */
static int find_queue(const sstr_t *name) {
  for (int i = 0; i < MAX_QUEUES; i++)
    if (g_queues[i].used && sstr_eq(&g_queues[i].name, name)) return i;
  return -1;
}
static int find_exchange(const sstr_t *name) {
  for (int i = 0; i < MAX_EXCHANGES; i++)
    if (g_exchanges[i].used && sstr_eq(&g_exchanges[i].name, name)) return i;
  return -1;
}
static int add_exchange(const char *name, int fanout) {
  for (int i = 0; i < MAX_EXCHANGES; i++)
    if (!g_exchanges[i].used) {
      exchange_t *x = &g_exchanges[i];
      memset(x, 0, sizeof *x);
      x->used = 1;
      x->fanout = fanout;
      x->name.len = (uint8_t)strlen(name);
      memcpy(x->name.s, name, x->name.len + 1);
      g_gen++;
      return i;
    }
  return -1;
}
static void unbind_queue_everywhere(int q) {
  for (int i = 0; i < MAX_EXCHANGES; i++)
    for (int b = 0; b < g_exchanges[i].nbind; b++)
      if (g_exchanges[i].bind[b].queue == q) g_exchanges[i].bind[b--] = g_exchanges[i].bind[--g_exchanges[i].nbind];
}

/* the queues a publish to (exchange, routing key) reaches; 0 and a closed connection for a missing exchange */
static int route_compute(conn_t *c, route_t *r, const uint8_t *key, uint16_t keylen) {
  rd_t rd = {key, key + keylen, 0};
  sstr_t xname, rk;
  rsstr(&rd, &xname);
  rsstr(&rd, &rk);
  r->n = 0;
  if (xname.len == 0) { /* the default exchange: the routing key names the queue */
    int q = find_queue(&rk);
    if (q >= 0) r->queue[r->n++] = q;
  } else {
    int xi = find_exchange(&xname);
    if (xi < 0) {
      conn_fail(c, 404, 60, 40, "NOT_FOUND - no exchange '%s' in vhost '/'", xname.s);
      return 0;
    }
    exchange_t *x = &g_exchanges[xi];
    for (int b = 0; b < x->nbind && r->n < MAX_TARGETS; b++) {
      if (!x->fanout && !sstr_eq(&x->bind[b].key, &rk)) continue;
      int dup = 0;
      for (int i = 0; i < r->n; i++) dup |= r->queue[i] == x->bind[b].queue;
      if (!dup) r->queue[r->n++] = x->bind[b].queue;
    }
  }
  r->gen = g_gen;
  r->keylen = keylen;
  memcpy(r->key, key, keylen);
  return 1;
}

/* ------------------------------------------------------------------ */
/* the message path                                                    */
/* ------------------------------------------------------------------ */

/* basic.deliver built in place, then the publisher's header and body frames copied as they came */
static void deliver(conn_t *k, uint16_t kch, const uint8_t *key, uint16_t keylen, const uint8_t *content,
                    size_t clen) {
  channel_t *kc = &k->ch[kch];
  uint8_t *o = out_reserve(k, DELIVER_MAX + clen); /* room was checked by the caller */
  size_t n = 12;
  o[0] = 1;
  put16(o + 1, kch);
  put32(o + 3, (uint32_t)(4 + 1 + kc->ctag.len + 8 + 1 + keylen));
  put16(o + 7, 60);
  put16(o + 9, 60);
  o[11] = kc->ctag.len;
  memcpy(o + n, kc->ctag.s, kc->ctag.len);
  n += kc->ctag.len;
  put64(o + n, ++kc->delivery_tag);
  n += 8;
  o[n++] = 0;                   /* redelivered */
  memcpy(o + n, key, keylen);   /* exchange and routing key: the same two shortstrs as in basic.publish */
  n += keylen;
  o[n++] = 0xCE;
  memcpy(o + n, content, clen);
  for (size_t f = 0; f < clen; f += 8 + get32(o + n + f + 3)) put16(o + n + f + 1, kch);
  k->olen += n + clen;
  mark_dirty(k);
  if (!kc->no_ack) kc->unacked++;
  st.delivered++;
}

/* One basic.publish at p (avail bytes buffered). Returns the bytes of the whole message once it is
   routed, 0 while it is incomplete, -1 when a consumer lacks credit or room (stall), -2 after closing. */
static long publish(conn_t *c, uint16_t chn, const uint8_t *p, size_t avail) {
  uint32_t msize = get32(p + 3);
  const uint8_t *pl = p + 7;
  /* basic.publish: class, method, reserved-1, exchange shortstr, routing-key shortstr, mandatory/immediate */
  if (msize < 9 || 7u + pl[6] >= msize || 8u + pl[6] + pl[7 + pl[6]] >= msize) {
    conn_fail(c, 502, 60, 40, "SYNTAX_ERROR - short basic.publish");
    return -2;
  }
  const uint8_t *key = pl + 6;
  uint16_t keylen = (uint16_t)(2 + pl[6] + pl[7 + pl[6]]);
  size_t pos = 8 + (size_t)msize, content = pos;
  if (avail < pos + 7) return 0;
  if (p[pos] != 2) {
    conn_fail(c, 505, 60, 40, "UNEXPECTED_FRAME - expected a content header");
    return -2;
  }
  uint32_t hsize = get32(p + pos + 3);
  if (avail < pos + 8 + hsize) return 0;
  if (hsize < 14 || p[pos + 7 + hsize] != 0xCE) {
    conn_fail(c, 501, 60, 40, "FRAME_ERROR - bad content header");
    return -2;
  }
  uint64_t body_size = get64(p + pos + 7 + 4), got = 0;
  pos += 8 + hsize;
  while (got < body_size) {
    if (avail < pos + 7) return 0;
    uint32_t bsize = get32(p + pos + 3);
    if (p[pos] != 3) {
      conn_fail(c, 505, 60, 40, "UNEXPECTED_FRAME - expected a content body");
      return -2;
    }
    if (avail < pos + 8 + bsize) return 0;
    if (p[pos + 7 + bsize] != 0xCE) {
      conn_fail(c, 501, 60, 40, "FRAME_ERROR - bad frame end");
      return -2;
    }
    got += bsize;
    pos += 8 + bsize;
  }
  if (got != body_size) {
    conn_fail(c, 501, 60, 40, "FRAME_ERROR - body longer than its header says");
    return -2;
  }
  channel_t *ch = &c->ch[chn];
  route_t *r = &ch->route;
  if (r->gen != g_gen || r->keylen != keylen || memcmp(r->key, key, keylen))
    if (!route_compute(c, r, key, keylen)) return -2;
  size_t clen = pos - content;
  /* all or nothing: a message is never half delivered because one of the fanout's consumers is full */
  for (int i = 0; i < r->n; i++) {
    const queue_t *q = &g_queues[r->queue[i]];
    const conn_t *k = q->consumer;
    if (!k) continue;
    const channel_t *kc = &k->ch[q->consumer_ch];
    if (!kc->no_ack && kc->credit && kc->unacked >= kc->credit) return -1;
    if (out_free(k) < OBUF_RESERVE + DELIVER_MAX + clen) return -1;
  }
  for (int i = 0; i < r->n; i++) {
    queue_t *q = &g_queues[r->queue[i]];
    if (q->consumer) deliver(q->consumer, q->consumer_ch, key, keylen, p + content, clen);
    else { q->messages++; st.counted++; }
  }
  if (!r->n) st.unroutable++; /* dropped, as RabbitMQ drops an unroutable message without mandatory */
  st.published++;
  if (ch->confirm) { ch->published++; c->confirm_due = 1; }
  return (long)pos;
}

/* basic.ack / basic.nack / basic.reject from a consumer: give the credit back */
static void settle(conn_t *c, channel_t *ch, uint16_t mth, const uint8_t *pl, uint32_t size) {
  if (size < 13) { conn_fail(c, 502, 60, mth, "SYNTAX_ERROR - short ack"); return; }
  uint64_t tag = get64(pl + 4);
  int multiple = mth != 90 && (pl[12] & 1);
  if (!ch->consuming || ch->no_ack || tag > ch->delivery_tag || (tag == 0 && !multiple)) {
    conn_fail(c, 406, 60, mth, "PRECONDITION_FAILED - unknown delivery tag %llu", (unsigned long long)tag);
    return;
  }
  uint64_t before = ch->unacked;
  if (!multiple) ch->unacked -= ch->unacked > 0;
  else if (tag == 0) ch->unacked = 0; /* multiple with tag 0: everything outstanding */
  /* in-order settlement: what stays unacked is the deliveries after `tag` */
  else if (ch->unacked > ch->delivery_tag - tag) ch->unacked = ch->delivery_tag - tag;
  st.ack_frames++;
  st.acked += before - ch->unacked;
}

/* the frames a read turn ended with: one basic.ack per confirming channel, multiple when it covers more */
static void emit_confirms(conn_t *c) {
  c->confirm_due = 0;
  for (uint16_t i = 0; i < MAX_CHANNELS; i++) {
    channel_t *ch = &c->ch[i];
    if (!ch->confirm || ch->published == ch->confirmed) continue;
    wr_t w;
    if (!method_begin(c, &w, i, 60, 80)) return;
    w64(&w, ch->published);
    w8(&w, ch->published - ch->confirmed > 1);
    method_end(c, &w);
    st.confirm_frames++;
    st.confirmed += ch->published - ch->confirmed;
    ch->confirmed = ch->published;
  }
}

/* ------------------------------------------------------------------ */
/* methods other than basic.publish (cold path)                        */
/* ------------------------------------------------------------------ */
static void send_start(conn_t *c) {
  wr_t w;
  if (!method_begin(c, &w, 0, 10, 10)) return;
  w8(&w, 0); w8(&w, 9);
  size_t tab = w.n; /* server-properties */
  w32(&w, 0);
  wcstr(&w, "product"); w8(&w, 'S'); wlstr(&w, "WarrenMQ ceiling sink (perf/sink.c)");
  wcstr(&w, "capabilities"); w8(&w, 'F');
  size_t caps = w.n;
  w32(&w, 0);
  wcstr(&w, "publisher_confirms"); w8(&w, 't'); w8(&w, 1);
  wcstr(&w, "per_consumer_qos"); w8(&w, 't'); w8(&w, 1);
  put32(w.b + caps, (uint32_t)(w.n - caps - 4));
  put32(w.b + tab, (uint32_t)(w.n - tab - 4));
  wlstr(&w, "PLAIN AMQPLAIN");
  wlstr(&w, "en_US");
  method_end(c, &w);
}

static void channel_cancel(conn_t *c, channel_t *ch) {
  if (ch->consuming && g_queues[ch->queue].consumer == c) g_queues[ch->queue].consumer = NULL;
  ch->consuming = 0;
}

/* The -ok replies. Each `nowait` bit is honoured although amqpperf never sets it. */
static void on_method(conn_t *c, uint16_t chn, const uint8_t *pl, uint32_t size) {
  if (size < 4) { conn_fail(c, 502, 0, 0, "SYNTAX_ERROR - short method frame"); return; }
  uint16_t cls = get16(pl), mth = get16(pl + 2);
  rd_t r = {pl + 4, pl + size, 0};
  channel_t *ch = &c->ch[chn];
  wr_t w;
  sstr_t a, b, k;
  if (chn && !ch->open && !(cls == 20 && (mth == 10 || mth == 41))) {
    conn_fail(c, 504, cls, mth, "CHANNEL_ERROR - channel %u is not open", chn);
    return;
  }
  switch (cls << 16 | mth) {
    case 10 << 16 | 11: /* connection.start-ok: any credentials will do */
      if (!method_begin(c, &w, 0, 10, 30)) return;
      w16(&w, MAX_CHANNELS - 1); w32(&w, FRAME_MAX); w16(&w, 0); /* no heartbeats: a run lasts < 60 s */
      method_end(c, &w);
      return;
    case 10 << 16 | 31: return; /* connection.tune-ok */
    case 10 << 16 | 40:         /* connection.open */
      if (!method_begin(c, &w, 0, 10, 41)) return;
      wcstr(&w, "");
      method_end(c, &w);
      return;
    case 10 << 16 | 50: /* connection.close */
      if (!method_begin(c, &w, 0, 10, 51)) return;
      method_end(c, &w);
      c->close_after_flush = 1;
      return;
    case 10 << 16 | 51: conn_close(c); return; /* connection.close-ok */
    case 20 << 16 | 10:                        /* channel.open */
      memset(ch, 0, sizeof *ch);
      ch->open = 1;
      if (!method_begin(c, &w, chn, 20, 11)) return;
      w32(&w, 0);
      method_end(c, &w);
      return;
    case 20 << 16 | 40: /* channel.close */
      channel_cancel(c, ch);
      ch->open = 0;
      if (!method_begin(c, &w, chn, 20, 41)) return;
      method_end(c, &w);
      return;
    case 20 << 16 | 41: return;
    case 40 << 16 | 10: { /* exchange.declare */
      r16(&r); rsstr(&r, &a); rsstr(&r, &b);
      uint8_t bits = r8(&r);
      if (r.bad) break;
      int fanout = !strcmp(b.s, "fanout");
      if (!fanout && strcmp(b.s, "direct")) {
        conn_fail(c, 540, cls, mth, "NOT_IMPLEMENTED - the sink routes direct and fanout exchanges only");
        return;
      }
      if (find_exchange(&a) < 0 && add_exchange(a.s, fanout) < 0) {
        conn_fail(c, 541, cls, mth, "INTERNAL_ERROR - too many exchanges");
        return;
      }
      if (bits & 16) return;
      if (!method_begin(c, &w, chn, 40, 11)) return;
      method_end(c, &w);
      return;
    }
    case 40 << 16 | 20: { /* exchange.delete */
      r16(&r); rsstr(&r, &a);
      uint8_t bits = r8(&r);
      if (r.bad) break;
      int xi = find_exchange(&a);
      if (xi >= 0) { g_exchanges[xi].used = 0; g_gen++; }
      if (bits & 2) return;
      if (!method_begin(c, &w, chn, 40, 21)) return;
      method_end(c, &w);
      return;
    }
    case 50 << 16 | 10: { /* queue.declare */
      r16(&r); rsstr(&r, &a);
      uint8_t bits = r8(&r);
      if (r.bad) break;
      if (a.len == 0) a.len = (uint8_t)snprintf(a.s, sizeof a.s, "amq.gen-sink-%llu", (unsigned long long)++g_qname_seq);
      int q = find_queue(&a);
      if (q < 0 && (bits & 1)) {
        conn_fail(c, 404, cls, mth, "NOT_FOUND - no queue '%s' in vhost '/'", a.s);
        return;
      }
      if (q < 0) {
        for (q = 0; q < MAX_QUEUES && g_queues[q].used; q++) {}
        if (q == MAX_QUEUES) { conn_fail(c, 541, cls, mth, "INTERNAL_ERROR - too many queues"); return; }
        memset(&g_queues[q], 0, sizeof g_queues[q]);
        g_queues[q].used = 1;
        g_queues[q].name = a;
        g_gen++;
      }
      if (bits & 16) return;
      if (!method_begin(c, &w, chn, 50, 11)) return;
      wsstr(&w, &a);
      w32(&w, (uint32_t)g_queues[q].messages);
      w32(&w, g_queues[q].consumer != NULL);
      method_end(c, &w);
      return;
    }
    case 50 << 16 | 20: { /* queue.bind */
      r16(&r); rsstr(&r, &a); rsstr(&r, &b); rsstr(&r, &k);
      uint8_t bits = r8(&r);
      if (r.bad) break;
      int q = find_queue(&a), xi = find_exchange(&b);
      if (q < 0 || xi < 0) {
        conn_fail(c, 404, cls, mth, "NOT_FOUND - no %s '%s' in vhost '/'", q < 0 ? "queue" : "exchange",
                  q < 0 ? a.s : b.s);
        return;
      }
      exchange_t *x = &g_exchanges[xi];
      int have = 0;
      for (int i = 0; i < x->nbind; i++) have |= x->bind[i].queue == q && sstr_eq(&x->bind[i].key, &k);
      if (!have) {
        if (x->nbind == MAX_BINDINGS) { conn_fail(c, 541, cls, mth, "INTERNAL_ERROR - too many bindings"); return; }
        x->bind[x->nbind].queue = q;
        x->bind[x->nbind++].key = k;
        g_gen++;
      }
      if (bits & 1) return;
      if (!method_begin(c, &w, chn, 50, 21)) return;
      method_end(c, &w);
      return;
    }
    case 50 << 16 | 40: { /* queue.delete: a missing queue is deleted already, as RabbitMQ answers */
      r16(&r); rsstr(&r, &a);
      uint8_t bits = r8(&r);
      if (r.bad) break;
      int q = find_queue(&a);
      uint32_t n = 0;
      if (q >= 0) {
        n = (uint32_t)g_queues[q].messages;
        conn_t *k2 = g_queues[q].consumer;
        if (k2) k2->ch[g_queues[q].consumer_ch].consuming = 0;
        g_queues[q].used = 0;
        g_queues[q].consumer = NULL;
        unbind_queue_everywhere(q);
        g_gen++;
      }
      if (bits & 4) return;
      if (!method_begin(c, &w, chn, 50, 41)) return;
      w32(&w, n);
      method_end(c, &w);
      return;
    }
    case 60 << 16 | 10: /* basic.qos: prefetch-size, prefetch-count, global */
      r.p += 4;
      ch->prefetch = r16(&r);
      if (r.bad) break;
      if (!method_begin(c, &w, chn, 60, 11)) return;
      method_end(c, &w);
      return;
    case 60 << 16 | 20: { /* basic.consume */
      r16(&r); rsstr(&r, &a); rsstr(&r, &b);
      uint8_t bits = r8(&r);
      if (r.bad) break;
      int q = find_queue(&a);
      if (q < 0) { conn_fail(c, 404, cls, mth, "NOT_FOUND - no queue '%s' in vhost '/'", a.s); return; }
      if (g_queues[q].consumer || ch->consuming) {
        conn_fail(c, 540, cls, mth, "NOT_IMPLEMENTED - the sink has one consumer per queue and channel");
        return;
      }
      if (b.len == 0) b.len = (uint8_t)snprintf(b.s, sizeof b.s, "amq.ctag-sink-%llu", (unsigned long long)++g_ctag_seq);
      ch->consuming = 1;
      ch->queue = q;
      ch->no_ack = (bits & 2) != 0;
      ch->credit = ch->prefetch;
      ch->ctag = b;
      ch->unacked = 0;
      g_queues[q].consumer = c;
      g_queues[q].consumer_ch = chn;
      if (bits & 8) return;
      if (!method_begin(c, &w, chn, 60, 21)) return;
      wsstr(&w, &b);
      method_end(c, &w);
      return;
    }
    case 60 << 16 | 30: { /* basic.cancel */
      rsstr(&r, &a);
      uint8_t bits = r8(&r);
      if (r.bad) break;
      channel_cancel(c, ch);
      if (bits & 1) return;
      if (!method_begin(c, &w, chn, 60, 31)) return;
      wsstr(&w, &a);
      method_end(c, &w);
      return;
    }
    case 60 << 16 | 80:  /* basic.ack */
    case 60 << 16 | 90:  /* basic.reject */
    case 60 << 16 | 120: /* basic.nack */
      settle(c, ch, mth, pl, size);
      return;
    case 85 << 16 | 10: /* confirm.select */
      ch->confirm = 1;
      if (r8(&r) & 1) return;
      if (!method_begin(c, &w, chn, 85, 11)) return;
      method_end(c, &w);
      return;
    default:
      conn_fail(c, 540, cls, mth, "NOT_IMPLEMENTED - the sink does not answer method %u.%u", cls, mth);
      return;
  }
  conn_fail(c, 502, cls, mth, "SYNTAX_ERROR - short method %u.%u", cls, mth);
}

/* ------------------------------------------------------------------ */
/* frames of one connection                                            */
/* ------------------------------------------------------------------ */
static void stall(conn_t *c) {
  c->stalled = 1;
  st.stalls++;
  g_stalled[g_nstalled++] = c;
  if (c->reading) { c->reading = 0; arm(c); } /* the publisher's kernel buffer is the queue now */
}

static void process(conn_t *c) {
  while (!c->dead && !c->close_after_flush) {
    const uint8_t *p = c->rbuf + c->rpos;
    size_t avail = c->rlen - c->rpos;
    if (!c->got_header) {
      if (avail < 8) break;
      if (memcmp(p, "AMQP\0\0\x09\x01", 8)) { /* AMQP 0-9-1 4.2.2: answer with the header we speak */
        wr_t w = {out_reserve(c, 8), 0};
        wbytes(&w, "AMQP\0\0\x09\x01", 8);
        c->olen += 8;
        mark_dirty(c);
        c->close_after_flush = 1;
        break;
      }
      c->got_header = 1;
      c->rpos += 8;
      send_start(c);
      continue;
    }
    if (avail < 7) break;
    uint8_t type = p[0];
    uint16_t chn = get16(p + 1);
    uint32_t size = get32(p + 3);
    if (size > FRAME_MAX) { conn_fail(c, 501, 0, 0, "FRAME_ERROR - frame of %u bytes", size); break; }
    if (avail < (size_t)size + 8) break;
    if (p[7 + size] != 0xCE) { conn_fail(c, 501, 0, 0, "FRAME_ERROR - bad frame end"); break; }
    if (chn >= MAX_CHANNELS) { conn_fail(c, 504, 0, 0, "CHANNEL_ERROR - channel %u", chn); break; }
    if (type == 1 && size >= 4 && get16(p + 7) == 60 && get16(p + 9) == 40) {
      if (!c->ch[chn].open) { conn_fail(c, 504, 60, 40, "CHANNEL_ERROR - channel %u is not open", chn); break; }
      long n = publish(c, chn, p, avail);
      if (n == 0) break;
      if (n == -1) { stall(c); break; }
      if (n < 0) break;
      c->rpos += (size_t)n;
      continue;
    }
    c->rpos += (size_t)size + 8;
    if (type == 1) on_method(c, chn, p + 7, size);
    else if (type != 8) { conn_fail(c, 505, 0, 0, "UNEXPECTED_FRAME - content frame outside a publish"); break; }
  }
  if (c->confirm_due && !c->dead) emit_confirms(c);
}

static void on_readable(conn_t *c) {
  if (c->rpos) { /* keep the unfinished message at the front */
    memmove(c->rbuf, c->rbuf + c->rpos, c->rlen - c->rpos);
    c->rlen -= c->rpos;
    c->rpos = 0;
  }
  if (c->rlen == RBUF_BYTES) {
    conn_fail(c, 501, 60, 40, "FRAME_ERROR - a message larger than the sink's %d KiB read buffer", RBUF_BYTES / 1024);
    return;
  }
  ssize_t n = read(c->fd, c->rbuf + c->rlen, RBUF_BYTES - c->rlen);
  st.reads++;
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) { conn_close(c); return; }
  if (n < 0) return;
  c->rlen += (size_t)n;
  process(c);
}

/* publishers stalled on credit or room retry; returns whether any of them moved */
static int run_stalled(void) {
  conn_t *list[MAX_CONNS];
  int n = g_nstalled, moved = 0;
  memcpy(list, g_stalled, sizeof(conn_t *) * (size_t)n);
  g_nstalled = 0;
  for (int i = 0; i < n; i++) {
    conn_t *c = list[i];
    if (c->dead) continue;
    size_t before = c->rpos;
    c->stalled = 0;
    process(c);
    moved |= c->rpos != before;
    if (!c->stalled && !c->reading && !c->dead && !c->close_after_flush) { c->reading = 1; arm(c); }
  }
  return moved;
}

static void flush_dirty(void) {
  for (int i = 0; i < g_ndirty; i++) {
    g_dirty[i]->dirty = 0;
    flush(g_dirty[i]);
  }
  g_ndirty = 0;
}

static void on_accept(int lfd) {
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (g_nconns >= MAX_CONNS - 1) { close(fd); continue; }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* latency: frames leave with their write */
    conn_t *c = calloc(1, sizeof *c);
    c->fd = fd;
    c->rbuf = malloc(RBUF_BYTES);
    c->obuf = malloc(OBUF_BYTES);
    c->reading = 1;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(g_epfd, EPOLL_CTL_ADD, fd, &ev);
    g_nconns++;
    st.conns++;
  }
}

static void on_signal(int sig) { (void)sig; g_stop = 1; }

int main(int argc, char **argv) {
  if (argc < 2) { fprintf(stderr, "usage: %s PORT [HOST]\n", argv[0]); return 1; }
  int port = atoi(argv[1]);
  const char *host = argc > 2 ? argv[2] : "127.0.0.1";
  struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: epoll_wait returns EINTR */
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl)) { rl.rlim_cur = rl.rlim_max; setrlimit(RLIMIT_NOFILE, &rl); }

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (inet_pton(AF_INET, host, &addr.sin_addr) != 1 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) ||
      listen(lfd, 4096)) {
    fprintf(stderr, "sink: cannot listen on %s:%d: %s\n", host, port, strerror(errno));
    return 1;
  }
  g_epfd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  epoll_ctl(g_epfd, EPOLL_CTL_ADD, lfd, &lev);
  add_exchange("amq.direct", 0);
  add_exchange("amq.fanout", 1);
  fprintf(stderr, "sink: listening on %s:%d\n", host, port);

  struct epoll_event evs[256];
  while (!g_stop) {
    int n = epoll_wait(g_epfd, evs, 256, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      perror("epoll_wait");
      return 1;
    }
    for (int i = 0; i < n; i++) {
      conn_t *c = evs[i].data.ptr;
      if (!c) { on_accept(lfd); continue; }
      if (c->dead) continue;
      if (evs[i].events & EPOLLOUT) flush(c);
      if (c->dead) continue;
      if (evs[i].events & EPOLLIN) on_readable(c);
      else if (evs[i].events & (EPOLLHUP | EPOLLERR)) conn_close(c);
    }
    /* One write per connection per turn. Stalled publishers go first (acks read this turn gave credit
       back), then again after every flush for as long as they move: a flush that empties a consumer's
       buffer arms no EPOLLOUT, so a publisher stalled on that room would otherwise wait for an event
       that never comes. When they stop moving, each waits on an armed event: EPOLLOUT of a consumer
       with pending output, or the acks of deliveries already written. */
    run_stalled();
    flush_dirty();
    while (g_nstalled && run_stalled()) flush_dirty();
    flush_dirty(); /* a connection closed with an error inside run_stalled */
    for (int i = 0; i < g_ndead; i++) {
      free(g_dead[i]->rbuf);
      free(g_dead[i]->obuf);
      free(g_dead[i]);
    }
    g_ndead = 0;
  }
  fprintf(stderr,
          "{\"sink\":\"stats\",\"connections\":%llu,\"published\":%llu,\"delivered\":%llu,\"counted\":%llu,"
          "\"unroutable\":%llu,\"ack_frames\":%llu,\"acked\":%llu,\"confirm_frames\":%llu,\"confirmed\":%llu,"
          "\"stalls\":%llu,\"reads\":%llu,\"writes\":%llu}\n",
          (unsigned long long)st.conns, (unsigned long long)st.published, (unsigned long long)st.delivered,
          (unsigned long long)st.counted, (unsigned long long)st.unroutable, (unsigned long long)st.ack_frames,
          (unsigned long long)st.acked, (unsigned long long)st.confirm_frames, (unsigned long long)st.confirmed,
          (unsigned long long)st.stalls, (unsigned long long)st.reads, (unsigned long long)st.writes);
  return 0;
}
