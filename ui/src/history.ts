// The message history's steps (GET /api/warrenmq/message-history/{vhost}) told as one line each.
export interface Hop {
  source: string;
  destination: string;
  destination_type: "exchange" | "queue";
  alternate: boolean;
  binding_keys?: string[];
}
export interface Step {
  at: number;
  step: string;
  queue?: string;
  queues?: string[];
  hops?: Hop[];
  consumer_tag?: string | null;
  delivery_tag?: number;
  redelivered?: boolean;
  no_ack?: boolean;
  requeue?: boolean;
  reason?: string;
  exchange?: string;
  connection?: string;
  channel?: number;
  reply_code?: number;
}
export interface HistoryRecord {
  id: number;
  vhost: string;
  exchange: string;
  routing_key: string;
  body_size: number;
  properties: { message_id?: string; correlation_id?: string };
  steps: Step[];
  steps_dropped: number;
}
export interface History {
  enabled: boolean;
  capacity: number;
  messages: HistoryRecord[];
}

const exchangeName = (name: string) => name || "(AMQP default)";

/** "12:03:04.123" in the browser's time zone: the steps of one message are milliseconds apart. */
export function clock(ms: number): string {
  const d = new Date(ms);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

export function hopText(hop: Hop): string {
  const keys = hop.binding_keys ?? [];
  const via = hop.alternate ? " (alternate exchange)" : keys.length ? ` (binding key ${keys.map((k) => `"${k}"`).join(", ")})` : "";
  return `${exchangeName(hop.source)} → ${hop.destination_type === "exchange" ? "exchange " : ""}${hop.destination}${via}`;
}

export function describeStep(step: Step, record: Pick<HistoryRecord, "exchange" | "routing_key">): string {
  switch (step.step) {
    case "published":
      return `published to ${exchangeName(record.exchange)} with routing key "${record.routing_key}"${step.connection ? ` by ${step.connection}` : ""}`;
    case "routed":
      return step.queues && step.queues.length ? `routed to ${step.queues.join(", ")}` : "unroutable: no queue matched";
    case "returned":
      return "returned to the publisher (mandatory, unroutable)";
    case "delivered": {
      const to = step.consumer_tag ? `consumer ${step.consumer_tag}` : "basic.get";
      return `delivered from ${step.queue} to ${to}${step.redelivered ? " (redelivered)" : ""}${step.no_ack ? ", auto-ack" : ""}`;
    }
    case "acked":
      return `acked in ${step.queue}`;
    case "nacked":
      return `nacked in ${step.queue}${step.requeue ? ", requeued" : ", not requeued"}`;
    case "requeued":
      return `requeued in ${step.queue}`;
    case "dead_lettered":
      return `dead-lettered from ${step.queue} (${step.reason}) through ${exchangeName(step.exchange ?? "")} to ${(step.queues ?? []).join(", ") || "no queue"}`;
    case "expired":
      return `expired in ${step.queue}`;
    case "dropped":
      return `dropped from ${step.queue} (${step.reason ?? "no reason"})`;
    default:
      return step.step;
  }
}

/** Where the message is now, from its last step: what a user looking for a lost message asks first. */
export function outcome(record: HistoryRecord): string {
  const last = record.steps[record.steps.length - 1];
  if (!last) return "unknown";
  if (last.step === "routed") return last.queues && last.queues.length ? "waiting in queue" : "unroutable";
  if (last.step === "delivered") return last.no_ack ? "acked" : "awaiting ack";
  if (last.step === "published" || last.step === "requeued") return "waiting in queue";
  return last.step.replace("_", "-");
}
