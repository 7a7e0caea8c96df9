import { describe, expect, it } from "vitest";
import { clock, describeStep, hopText, outcome, type HistoryRecord } from "./history";

const record: HistoryRecord = {
  id: 7,
  vhost: "/",
  exchange: "front",
  routing_key: "order.new",
  body_size: 2,
  properties: { message_id: "m-1" },
  steps_dropped: 0,
  steps: [
    { at: 0, step: "published", connection: "127.0.0.1:5000 -> 127.0.0.1:5672", channel: 1 },
    { at: 1, step: "routed", queues: ["orders"], hops: [{ source: "front", destination: "orders-x", destination_type: "exchange", alternate: false }] },
    { at: 2, step: "delivered", queue: "orders", consumer_tag: "ctag-1", delivery_tag: 1, redelivered: false, no_ack: false },
  ],
};

describe("message history", () => {
  it("tells each step with its queue and consumer", () => {
    expect(describeStep(record.steps[0], record)).toBe('published to front with routing key "order.new" by 127.0.0.1:5000 -> 127.0.0.1:5672');
    expect(describeStep(record.steps[1], record)).toBe("routed to orders");
    expect(describeStep(record.steps[2], record)).toBe("delivered from orders to consumer ctag-1");
    expect(describeStep({ at: 0, step: "delivered", queue: "q", consumer_tag: null, redelivered: true, no_ack: true }, record)).toBe("delivered from q to basic.get (redelivered), auto-ack");
    expect(describeStep({ at: 0, step: "routed", queues: [] }, record)).toBe("unroutable: no queue matched");
    expect(describeStep({ at: 0, step: "dead_lettered", queue: "orders", reason: "rejected", exchange: "dlx", queues: ["dead"] }, record)).toBe("dead-lettered from orders (rejected) through dlx to dead");
    expect(describeStep({ at: 0, step: "nacked", queue: "orders", requeue: true }, record)).toBe("nacked in orders, requeued");
  });

  it("names exchange hops and alternate exchanges", () => {
    expect(hopText({ source: "", destination: "q", destination_type: "queue", alternate: false })).toBe("(AMQP default) → q");
    expect(hopText({ source: "main", destination: "ae", destination_type: "exchange", alternate: true, binding_keys: [] })).toBe("main → exchange ae (alternate exchange)");
    expect(hopText({ source: "amq.topic", destination: "orders", destination_type: "queue", alternate: false, binding_keys: ["order.*", "#"] })).toBe('amq.topic → orders (binding key "order.*", "#")');
  });

  it("reads the outcome from the last step", () => {
    expect(outcome(record)).toBe("awaiting ack");
    expect(outcome({ ...record, steps: [...record.steps, { at: 3, step: "acked", queue: "orders" }] })).toBe("acked");
    expect(outcome({ ...record, steps: record.steps.slice(0, 2) })).toBe("waiting in queue");
    expect(outcome({ ...record, steps: [{ at: 0, step: "routed", queues: [] }] })).toBe("unroutable");
    expect(outcome({ ...record, steps: [{ at: 0, step: "dead_lettered" }] })).toBe("dead-lettered");
    expect(outcome({ ...record, steps: [] })).toBe("unknown");
  });

  it("shows milliseconds", () => {
    expect(clock(new Date(2026, 0, 1, 9, 5, 7, 42).getTime())).toBe("09:05:07.042");
  });
});
