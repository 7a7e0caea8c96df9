import { useState } from "preact/hooks";
import { call } from "./api";
import { WINDOW } from "./chart";
import { TotalsCharts } from "./charts";
import { useCtx, useGet } from "./hooks";
import { apiPath, link } from "./routes";
import { ActionForm, Field, Section, Table, fmt, jsonObject, str } from "./widgets";

interface QueueRow {
  name: string;
  vhost: string;
  type?: string;
  state?: string;
  messages?: number;
  messages_ready?: number;
  messages_unacknowledged?: number;
  consumers?: number;
  durable?: boolean;
  arguments?: Record<string, unknown>;
  consumer_details?: { consumer_tag: string; ack_required: boolean; prefetch_count: number; arguments?: Record<string, unknown>; channel_details?: { name?: string } }[];
  message_stats?: Record<string, unknown>;
  [key: string]: unknown;
}

// What a stream's page shows besides its type: its retention arguments and, where the API gives them,
// its offsets (RabbitMQ 3.13 lists committed_offset / first_offset / segments for streams).
const STREAM_KEYS = ["x-max-length-bytes", "x-max-age", "x-stream-max-segment-size-bytes", "x-stream-filter-size-bytes"];
const STREAM_FIELDS = ["first_offset", "committed_offset", "segments", "readers"];

export function StreamInfo({ q }: { q: QueueRow }) {
  const args = STREAM_KEYS.filter((key) => q.arguments?.[key] !== undefined);
  const fields = STREAM_FIELDS.filter((key) => q[key] !== undefined && q[key] !== null);
  return (
    <Section title="Stream">
      <table id="stream-info">
        <tbody>
          <tr><th>Type</th><td>stream (an append-only log: consumers read from an offset and nothing is removed by consuming)</td></tr>
          {fields.map((key) => <tr><th>{key.replace(/_/g, " ")}</th><td>{typeof q[key] === "object" ? JSON.stringify(q[key]) : String(q[key])}</td></tr>)}
          {args.map((key) => <tr><th>{key}</th><td>{String(q.arguments?.[key])}</td></tr>)}
        </tbody>
      </table>
    </Section>
  );
}
interface Page<T> {
  items: T[];
  page: number;
  page_count: number;
  filtered_count: number;
  total_count: number;
}
interface BindingRow {
  source: string;
  destination: string;
  routing_key: string;
  arguments?: Record<string, unknown>;
  properties_key: string;
}

export function QueuesPage() {
  const { session, vhost, changes } = useCtx();
  const [page, setPage] = useState(1);
  const [name, setName] = useState("");
  const [regex, setRegex] = useState(false);
  const [bump, setBump] = useState(0);
  const query = new URLSearchParams({ page: String(page), page_size: "100", name, use_regex: String(regex)});
  const list = useGet<Page<QueueRow>>(`${apiPath("queues", vhost)}?${query.toString()}`, bump);
  const data = list.data;
  return (
    <div>
      <h1>Queues</h1>
      <div class="filters">
        <input placeholder="Filter by name" name="filter" value={name} onInput={(e) => { setName(e.currentTarget.value); setPage(1); }} />
        <label><input type="checkbox" checked={regex} onChange={(e) => setRegex(e.currentTarget.checked)} /> Regex</label>
        {data && (
          <span class="muted">
            {fmt(data.filtered_count)} of {fmt(data.total_count)} · page{" "}
            <button disabled={page <= 1} onClick={() => setPage(page - 1)}>‹</button> {data.page} / {Math.max(1, data.page_count)}{" "}
            <button disabled={page >= data.page_count} onClick={() => setPage(page + 1)}>›</button>
          </span>
        )}
      </div>
      {list.error && <p class="error">{list.error}</p>}
      <Table
        rows={data?.items ?? []}
        empty="No queues."
        columns={[
          { title: "Name", cell: (q) => <a href={link("queues", q.vhost, q.name)}>{q.name}</a> },
          { title: "Type", cell: (q) => q.type ?? "classic" },
          { title: "State", cell: (q) => q.state ?? "" },
          { title: "Ready", cell: (q) => fmt(q.messages_ready) },
          { title: "Unacked", cell: (q) => fmt(q.messages_unacknowledged) },
          { title: "Total", cell: (q) => fmt(q.messages) },
          { title: "Consumers", cell: (q) => fmt(q.consumers) },
        ]}
      />
      {changes && (
        <Section title="Add a new queue">
          <ActionForm
            name="add-queue"
            label="Add queue"
            action={async (form) => {
              const queue = str(form, "name");
              await call(session, "PUT", apiPath("queues", vhost, queue), {
                durable: form.get("durable") === "on",
                auto_delete: false,
                arguments: jsonObject(str(form, "arguments")),
              });
              setBump(bump + 1);
              return `Queue ${queue} added.`;
            }}
          >
            <Field label="Name"><input name="name" required /></Field>
            <Field label="Durable"><input type="checkbox" name="durable" checked /></Field>
            <Field label="Arguments (JSON)"><input name="arguments" placeholder='{"x-queue-type": "quorum"}' /></Field>
          </ActionForm>
        </Section>
      )}
    </div>
  );
}

interface Got {
  payload: string;
  payload_encoding: string;
  routing_key: string;
  exchange: string;
  redelivered: boolean;
  message_count: number;
  properties: Record<string, unknown>;
}

export function QueuePage({ vhost, name }: { vhost: string; name: string }) {
  const { session, changes } = useCtx();
  const [bump, setBump] = useState(0);
  const [got, setGot] = useState<Got[] | null>(null);
  const path = apiPath("queues", vhost, name);
  const queue = useGet<QueueRow>(`${path}?${WINDOW}`, bump);
  const bindings = useGet<BindingRow[]>(`${path}/bindings`, bump);
  const q = queue.data;
  if (queue.error) return <p class="error">{queue.error}</p>;
  if (!q) return <p class="muted">Loading…</p>;
  return (
    <div>
      <h1>Queue <span class="name">{name}</span></h1>
      <div class="tiles">
        <div class="tile"><b id="queue-ready">{fmt(q.messages_ready)}</b><span>ready</span></div>
        <div class="tile"><b>{fmt(q.messages_unacknowledged)}</b><span>unacked</span></div>
        <div class="tile"><b>{fmt(q.consumers)}</b><span>consumers</span></div>
        <div class="tile"><b>{q.type ?? "classic"}</b><span>{q.durable ? "durable" : "transient"}</span></div>
      </div>
      <p class="muted">Arguments: {JSON.stringify(q.arguments ?? {})}</p>
      <TotalsCharts stats={q.message_stats} lengths={q} />
      {q.type === "stream" && <StreamInfo q={q} />}
      <Section title="Consumers">
        <Table
          rows={q.consumer_details ?? []}
          empty="No consumers."
          columns={[
            { title: "Channel", cell: (c) => (c.channel_details?.name ? <a href={link("channels", c.channel_details.name)}>{c.channel_details.name}</a> : "") },
            { title: "Tag", cell: (c) => c.consumer_tag },
            { title: "Ack required", cell: (c) => String(c.ack_required) },
            { title: "Prefetch", cell: (c) => c.prefetch_count },
            { title: "Arguments", cell: (c) => JSON.stringify(c.arguments ?? {}) },
          ]}
        />
      </Section>
      <Section title="Bindings">
        <Table
          rows={bindings.data ?? []}
          columns={[
            { title: "From", cell: (b) => (b.source === "" ? "(default exchange)" : <a href={link("exchanges", vhost, b.source)}>{b.source}</a>) },
            { title: "Routing key", cell: (b) => b.routing_key },
            { title: "Arguments", cell: (b) => JSON.stringify(b.arguments ?? {}) },
            ...(changes
              ? [{ title: "", cell: (b: BindingRow) => (b.source === "" ? null : <button name="unbind" onClick={() => void call(session, "DELETE", `${apiPath("bindings", vhost, "e", b.source, "q", name)}/${b.properties_key}`).then(() => setBump(bump + 1))}>Unbind</button>) }]
              : []),
          ]}
        />
        {changes && (
          <ActionForm
            name="bind-queue"
            label="Bind"
            action={async (form) => {
              await call(session, "POST", apiPath("bindings", vhost, "e", str(form, "source"), "q", name), {
                routing_key: str(form, "routing_key"),
                arguments: jsonObject(str(form, "arguments")),
              });
              setBump(bump + 1);
              return "Bound.";
            }}
          >
            <Field label="From exchange"><input name="source" required /></Field>
            <Field label="Routing key"><input name="routing_key" /></Field>
            <Field label="Arguments (JSON)"><input name="arguments" /></Field>
          </ActionForm>
        )}
      </Section>
      <Section title="Get messages">
        <ActionForm
          name="get-messages"
          label="Get message(s)"
          action={async (form) => {
            const rows = await call<Got[]>(session, "POST", `${path}/get`, {
              count: Number(str(form, "count") || "1"),
              ackmode: str(form, "ackmode"),
              encoding: "auto",
              truncate: 50000,
            });
            setGot(rows);
            setBump(bump + 1);
            return rows.length ? `${rows.length} message(s).` : "Queue is empty.";
          }}
        >
          <Field label="Ack mode">
            <select name="ackmode">
              <option value="ack_requeue_true">Nack message requeue true</option>
              <option value="ack_requeue_false">Automatic ack</option>
              <option value="reject_requeue_true">Reject requeue true</option>
              <option value="reject_requeue_false">Reject requeue false</option>
            </select>
          </Field>
          <Field label="Messages"><input name="count" value="1" size={4} /></Field>
        </ActionForm>
        {got?.map((m, i) => (
          <div class="message">
            <b>Message {i + 1}</b> · exchange {m.exchange || "(default)"} · routing key {m.routing_key} · redelivered {String(m.redelivered)} · {m.message_count} left
            <pre class="payload">{m.payload}</pre>
          </div>
        ))}
      </Section>
      {changes && (
        <Section title="Purge / delete">
          <ActionForm name="purge" label="Purge messages" action={async () => { await call(session, "DELETE", `${path}/contents`); setBump(bump + 1); return "Purged."; }}>{null}</ActionForm>
          <ActionForm
            name="delete-queue"
            label="Delete queue"
            action={async () => {
              if (!confirm(`Delete queue ${name}?`)) return "Not deleted.";
              await call(session, "DELETE", path);
              location.hash = link("queues");
            }}
          >
            {null}
          </ActionForm>
        </Section>
      )}
    </div>
  );
}
