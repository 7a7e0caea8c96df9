// The client matrix's Node.js program: @cloudamqp/amqp-client, which parses every frame strictly (it skips
// exactly the 4 bytes RabbitMQ's channel.open-ok carries and times a read out after one heartbeat interval).
// Usage: node scenario.mjs AMQP_URL NAME_PREFIX; prints one JSON observation (see tests/compat/clients/README.md).
import { AMQPClient } from "@cloudamqp/amqp-client";

const [url, prefix] = process.argv.slice(2);
const WAIT_MS = 5000;
const HEARTBEAT_S = 1;
const IDLE_MS = 3500;

const text = (data) => (data === null ? "" : Buffer.from(data).toString());
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const within = (promise, what, ms = WAIT_MS) =>
  Promise.race([promise, sleep(ms).then(() => Promise.reject(new Error(`timeout: ${what}`)))]);

async function connect(heartbeat = 0) {
  const client = new AMQPClient(`${url}?heartbeat=${heartbeat}`);
  // Why the connection went away ("Heartbeat timeout" when a read waited a whole interval), for the report.
  client.onerror = (err) => (client.firstError ??= err.message);
  return within(client.connect(), "connect");
}

// The client throws a frame it cannot parse out of its socket handler: the step in progress reports that error
// (its own wait then times out) instead of the process dying.
let uncaught = null;
let abortStep = () => {};
process.on("uncaughtException", (err) => {
  uncaught ??= `${err.name}: ${err.message}`;
  abortStep(new Error(uncaught));
});
const abortable = () => new Promise((_, reject) => (abortStep = reject));

// Each step has its own connection, so that a failure in one cannot hide the others.
async function step(body) {
  let conn;
  uncaught = null;
  const aborted = abortable();
  try {
    conn = await Promise.race([connect(), aborted]);
    return await Promise.race([within(body(conn), body.name, 3 * WAIT_MS), aborted]);
  } catch (err) {
    return { error: uncaught ?? String(err.message) };
  } finally {
    if (uncaught) conn?.socket?.destroy();
    else if (conn && !conn.closed) await within(conn.close(), "connection.close").catch(() => {});
  }
}

async function channelOpenClose(conn) {
  const first = await conn.channel();
  await within(first.close(), "channel.close");
  const second = await conn.channel();
  const ok = await within(second.queueDeclare("", { exclusive: true }), "queue.declare");
  return { first_closed: first.closed, second_open: !second.closed && ok.messageCount === 0 };
}

async function confirmsWithReturns(conn) {
  const queue = `${prefix}-confirms`;
  const ch = await conn.channel();
  await ch.queueDeclare(queue, { exclusive: true });
  await ch.confirmSelect();
  const events = [];
  ch.onReturn = (msg) => events.push(["return", msg.replyCode, msg.replyText, msg.exchange, msg.routingKey, text(msg.body)]);
  // A publish's promise settles in a later microtask, after the rest of the socket read is parsed, so its order
  // against onReturn depends on how the frames were split into reads: record each basic.ack (with its multiple
  // flag) where the client handles the frame instead.
  const publishConfirmed = ch.publishConfirmed.bind(ch);
  ch.publishConfirmed = (tag, multiple, nack) => {
    events.push([nack ? "nack" : "ack", Number(tag), multiple]);
    publishConfirmed(tag, multiple, nack);
  };
  const confirmed = [
    ch.basicPublish("", `${prefix}-nowhere`, "r1", {}, true),
    ch.basicPublish("", `${prefix}-nowhere`, "r2", {}, true),
    ch.basicPublish("", queue, "m1", {}, true),
  ];
  await within(Promise.all(confirmed), "confirms");
  return { events };
}

async function consumeAckNackReject(conn) {
  const queue = `${prefix}-consume`;
  const ch = await conn.channel();
  await ch.queueDeclare(queue, { exclusive: true });
  await ch.confirmSelect();
  for (const body of ["a", "b", "c"]) await within(ch.basicPublish("", queue, body), "publish");
  await ch.prefetch(10);
  const deliveries = [];
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  const consumer = await ch.basicConsume(queue, { noAck: false }, async (msg) => {
    const body = text(msg.body);
    deliveries.push([body, msg.redelivered]);
    if (body === "a") await msg.ack();
    else if (body === "b") await msg.nack(false);
    else if (!msg.redelivered) await msg.reject(true);
    else {
      await msg.ack();
      done();
    }
  });
  await within(finished, "deliveries");
  await consumer.cancel();
  const ok = await ch.queueDeclare(queue, { passive: true });
  return { deliveries, message_count: ok.messageCount };
}

async function directReplyTo(conn) {
  const queue = `${prefix}-rpc`;
  const server = await conn.channel();
  await server.queueDeclare(queue, { exclusive: true });
  const seen = {};
  await server.basicConsume(queue, { noAck: true }, async (msg) => {
    const replyTo = msg.properties.replyTo;
    seen.prefix = replyTo.startsWith("amq.rabbitmq.reply-to.") ? "amq.rabbitmq.reply-to." : replyTo;
    // RabbitMQ answers a passive declare of the pseudo-queue's name with declare-ok.
    const probe = await conn.channel();
    seen.passive_declare = await probe
      .queueDeclare(replyTo, { passive: true })
      .then(() => "declare-ok", (e) => e.message);
    if (!probe.closed) await probe.close();
    await server.basicPublish("", replyTo, "pong", { correlationId: msg.properties.correlationId });
  });
  const client = await conn.channel();
  let replied;
  const reply = new Promise((resolve) => (replied = resolve));
  await client.basicConsume("amq.rabbitmq.reply-to", { noAck: true }, (msg) =>
    replied([text(msg.body), msg.properties.correlationId]),
  );
  await client.basicPublish("", queue, "ping", { replyTo: "amq.rabbitmq.reply-to", correlationId: "c1" });
  const [body, correlationId] = await within(reply, "reply");
  return { ...seen, reply: body, correlation_id: correlationId };
}

async function heartbeats() {
  let conn;
  uncaught = null;
  const aborted = abortable();
  try {
    conn = await Promise.race([connect(HEARTBEAT_S), aborted]);
    const negotiated = conn.heartbeat;
    await sleep(IDLE_MS);
    const ch = await Promise.race([within(conn.channel(), "channel.open after idling"), aborted]);
    const ok = await Promise.race([within(ch.queueDeclare("", { exclusive: true }), "declare after idling"), aborted]);
    return { negotiated, alive: !conn.closed && ok.messageCount === 0 };
  } catch (err) {
    return { error: uncaught ?? String(err.message), connection_error: conn?.firstError ?? null };
  } finally {
    if (uncaught) conn?.socket?.destroy();
    else if (conn && !conn.closed) await within(conn.close(), "connection.close").catch(() => {});
  }
}

async function refusedPublish(conn) {
  const ch = await conn.channel();
  await ch.basicPublish(`${prefix}-missing`, "k", "x");
  // The channel.close arrives asynchronously; the next call on the channel reports it.
  const error = await within(ch.queueDeclare("", { exclusive: true }).then(() => "no error", (e) => e.message), "refusal");
  const other = await conn.channel();
  await other.queueDeclare("", { exclusive: true });
  return { error, channel_closed: ch.closed, connection_open: !conn.closed };
}

const observation = {
  channel: await step(channelOpenClose),
  confirms: await step(confirmsWithReturns),
  consume: await step(consumeAckNackReject),
  direct_reply_to: await step(directReplyTo),
  heartbeats: await heartbeats(),
  refused: await step(refusedPublish),
};
process.stdout.write(JSON.stringify(observation) + "\n");
process.exit(0);
