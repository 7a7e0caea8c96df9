import { useState } from "preact/hooks";
import { call } from "./api";
import { WINDOW } from "./chart";
import { RatesChart } from "./charts";
import { useCtx, useGet } from "./hooks";
import { apiPath, link } from "./routes";
import { ActionForm, Field, Section, Table, jsonObject, str } from "./widgets";

interface ExchangeRow {
  name: string;
  vhost: string;
  type: string;
  durable: boolean;
  internal: boolean;
  auto_delete: boolean;
  arguments?: Record<string, unknown>;
  message_stats?: Record<string, unknown>;
}
interface BindingRow {
  source: string;
  destination: string;
  destination_type: string;
  routing_key: string;
  arguments?: Record<string, unknown>;
  properties_key: string;
}

const shown = (name: string) => name || "(AMQP default)";
const pathName = (name: string) => name || "amq.default";

export function ExchangesPage() {
  const { session, vhost, changes } = useCtx();
  const [bump, setBump] = useState(0);
  const [filter, setFilter] = useState("");
  const list = useGet<ExchangeRow[]>(apiPath("exchanges", vhost), bump);
  const rows = (list.data ?? []).filter((e) => e.name.toLowerCase().includes(filter.toLowerCase()));
  return (
    <div>
      <h1>Exchanges</h1>
      <div class="filters"><input placeholder="Filter by name" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} /></div>
      {list.error && <p class="error">{list.error}</p>}
      <Table
        rows={rows}
        columns={[
          { title: "Name", cell: (e) => <a href={link("exchanges", e.vhost, pathName(e.name))}>{shown(e.name)}</a> },
          { title: "Type", cell: (e) => e.type },
          { title: "Features", cell: (e) => [e.durable && "D", e.auto_delete && "AD", e.internal && "I", e.arguments?.["alternate-exchange"] ? "AE" : ""].filter(Boolean).join(" ") },
        ]}
      />
      {changes && (
        <Section title="Add a new exchange">
          <ActionForm
            name="add-exchange"
            label="Add exchange"
            action={async (form) => {
              const name = str(form, "name");
              await call(session, "PUT", apiPath("exchanges", vhost, name), {
                type: str(form, "type"),
                durable: form.get("durable") === "on",
                internal: form.get("internal") === "on",
                auto_delete: false,
                arguments: jsonObject(str(form, "arguments")),
              });
              setBump(bump + 1);
              return `Exchange ${name} added.`;
            }}
          >
            <Field label="Name"><input name="name" required /></Field>
            <Field label="Type">
              <select name="type">{["direct", "fanout", "topic", "headers"].map((t) => <option>{t}</option>)}</select>
            </Field>
            <Field label="Durable"><input type="checkbox" name="durable" checked /></Field>
            <Field label="Internal"><input type="checkbox" name="internal" /></Field>
            <Field label="Arguments (JSON)"><input name="arguments" placeholder='{"alternate-exchange": "ae"}' /></Field>
          </ActionForm>
        </Section>
      )}
    </div>
  );
}

function BindingsTable({ rows, vhost, side, onUnbind }: { rows: BindingRow[]; vhost: string; side: "in" | "out"; onUnbind: ((b: BindingRow) => void) | null }) {
  return (
    <Table
      rows={rows}
      empty={side === "in" ? "No bindings to this exchange." : "No bindings from this exchange."}
      columns={[
        side === "in"
          ? { title: "From", cell: (b) => <a href={link("exchanges", vhost, b.source)}>{b.source}</a> }
          : { title: "To", cell: (b) => <a href={link(b.destination_type === "queue" ? "queues" : "exchanges", vhost, b.destination)}>{b.destination}</a> },
        { title: "Routing key", cell: (b) => b.routing_key },
        { title: "Arguments", cell: (b) => JSON.stringify(b.arguments ?? {}) },
        ...(onUnbind ? [{ title: "", cell: (b: BindingRow) => <button onClick={() => onUnbind(b)}>Unbind</button> }] : []),
      ]}
    />
  );
}

export function ExchangePage({ vhost, name }: { vhost: string; name: string }) {
  const { session, changes } = useCtx();
  const [bump, setBump] = useState(0);
  const path = apiPath("exchanges", vhost, name);
  const exchange = useGet<ExchangeRow>(`${path}?${WINDOW}`, bump);
  const outgoing = useGet<BindingRow[]>(`${path}/bindings/source`, bump);
  const incoming = useGet<BindingRow[]>(`${path}/bindings/destination`, bump);
  const e = exchange.data;
  if (exchange.error) return <p class="error">{exchange.error}</p>;
  if (!e) return <p class="muted">Loading…</p>;
  const unbind = changes
    ? (b: BindingRow) => {
        const kind = b.destination_type === "queue" ? "q" : "e";
        void call(session, "DELETE", `${apiPath("bindings", vhost, "e", b.source, kind, b.destination)}/${b.properties_key}`).then(() => setBump(bump + 1));
      }
    : null;
  return (
    <div>
      <h1>Exchange <span class="name">{shown(e.name)}</span></h1>
      <p class="muted">
        {e.type} · {e.durable ? "durable" : "transient"} · arguments {JSON.stringify(e.arguments ?? {})} · <a href={`${link("topology")}?${encodeURIComponent(e.name)}`}>topology</a>
      </p>
      <div class="charts"><RatesChart stats={e.message_stats} keys={[["publish_in", "Publish (in)"], ["publish_out", "Publish (out)"]]} /></div>
      <Section title="Bindings from this exchange">
        <BindingsTable rows={outgoing.data ?? []} vhost={vhost} side="out" onUnbind={unbind} />
      </Section>
      <Section title="Bindings to this exchange">
        <BindingsTable rows={incoming.data ?? []} vhost={vhost} side="in" onUnbind={unbind} />
      </Section>
      {changes && e.name !== "" && (
        <Section title="Add binding from this exchange">
          <ActionForm
            name="add-binding"
            label="Bind"
            action={async (form) => {
              const kind = str(form, "destination_type");
              await call(session, "POST", apiPath("bindings", vhost, "e", name, kind, str(form, "destination")), {
                routing_key: str(form, "routing_key"),
                arguments: jsonObject(str(form, "arguments")),
              });
              setBump(bump + 1);
              return "Bound.";
            }}
          >
            <Field label="To">
              <select name="destination_type"><option value="q">To queue</option><option value="e">To exchange</option></select>
            </Field>
            <Field label="Destination"><input name="destination" required /></Field>
            <Field label="Routing key"><input name="routing_key" /></Field>
            <Field label="Arguments (JSON)"><input name="arguments" /></Field>
          </ActionForm>
        </Section>
      )}
      {changes && (
        <Section title="Publish message">
          <ActionForm
            name="publish"
            label="Publish message"
            action={async (form) => {
              const headers = jsonObject(str(form, "headers"));
              const answer = await call<{ routed: boolean }>(session, "POST", `${path}/publish`, {
                routing_key: str(form, "routing_key"),
                payload: str(form, "payload"),
                payload_encoding: "string",
                properties: {
                  delivery_mode: Number(str(form, "delivery_mode")),
                  ...(str(form, "message_id") ? { message_id: str(form, "message_id") } : {}),
                  ...(Object.keys(headers).length ? { headers } : {}),
                },
              });
              return answer.routed ? "Message published." : "Message published, but not routed.";
            }}
          >
            <Field label="Routing key"><input name="routing_key" /></Field>
            <Field label="Delivery mode">
              <select name="delivery_mode"><option value="1">1 - Non-persistent</option><option value="2">2 - Persistent</option></select>
            </Field>
            <Field label="Message id"><input name="message_id" size={10} /></Field>
            <Field label="Headers (JSON)"><input name="headers" /></Field>
            <Field label="Payload"><textarea name="payload" rows={3} /></Field>
          </ActionForm>
        </Section>
      )}
      {changes && e.name !== "" && !e.name.startsWith("amq.") && (
        <Section title="Delete this exchange">
          <ActionForm name="delete-exchange" label="Delete" action={async () => { if (!confirm(`Delete exchange ${name}?`)) return "Not deleted."; await call(session, "DELETE", path); location.hash = link("exchanges"); }}>{null}</ActionForm>
        </Section>
      )}
    </div>
  );
}
