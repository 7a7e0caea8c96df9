import { useState } from "preact/hooks";
import { authHeader, call } from "./api";
import { WINDOW } from "./chart";
import { RatesChart } from "./charts";
import { useCtx, useGet } from "./hooks";
import { apiPath, link } from "./routes";
import { LimitsSection, PermissionsSection } from "./users";
import { ActionForm, Field, Section, Table, fmt, jsonObject, str } from "./widgets";

type Row = Record<string, unknown>;
const s = (value: unknown) => (value === undefined || value === null ? "" : typeof value === "object" ? JSON.stringify(value) : String(value));
const cell = (row: Row, key: string) => (typeof row[key] === "number" ? fmt(row[key]) : s(row[key]));

/** Label/value rows of an object's fields, for the detail pages. */
function Facts({ row, keys, id }: { row: Row; keys: string[]; id?: string }) {
  return (
    <table id={id}>
      <tbody>
        {keys.filter((k) => row[k] !== undefined).map((key) => (
          <tr><th>{key.replace(/_/g, " ")}</th><td>{cell(row, key)}</td></tr>
        ))}
      </tbody>
    </table>
  );
}

export function ConnectionsPage() {
  const { session, changes } = useCtx();
  const [bump, setBump] = useState(0);
  const list = useGet<Row[]>("/api/connections", bump);
  return (
    <div>
      <h1>Connections</h1>
      {list.error && <p class="error">{list.error}</p>}
      <Table
        rows={list.data ?? []}
        empty="No connections."
        columns={[
          { title: "Name", cell: (r) => <a href={link("connections", s(r.name))}>{s(r.name)}</a> },
          ...["vhost", "user", "state", "channels", "protocol"].map((key) => ({ title: key, cell: (r: Row) => cell(r, key) })),
          { title: "Client", cell: (r) => s((r.client_properties as Row | undefined)?.product) },
          ...(changes ? [{ title: "", cell: (r: Row) => <button onClick={() => void call(session, "DELETE", apiPath("connections", s(r.name))).then(() => setBump(bump + 1))}>Force close</button> }] : []),
        ]}
      />
    </div>
  );
}

export function ConnectionPage({ name }: { name: string }) {
  const { session, changes } = useCtx();
  const connection = useGet<Row>(`${apiPath("connections", name)}?${WINDOW}`);
  const channels = useGet<Row[]>(`${apiPath("connections", name)}/channels`);
  const c = connection.data;
  if (connection.error) return <p class="error">{connection.error === "404: Object Not Found" ? "This connection is closed." : connection.error}</p>;
  if (!c) return <p class="muted">Loading…</p>;
  return (
    <div>
      <h1>Connection <span class="name">{name}</span></h1>
      <Facts id="connection-facts" row={c} keys={["user", "vhost", "state", "protocol", "auth_mechanism", "ssl", "peer_host", "peer_port", "channel_max", "frame_max", "timeout", "user_provided_name", "recv_oct", "send_oct"]} />
      <Section title="Client properties">
        <Facts row={(c.client_properties as Row | undefined) ?? {}} keys={Object.keys((c.client_properties as Row | undefined) ?? {})} />
      </Section>
      <Section title="Channels">
        <Table
          rows={channels.data ?? []}
          empty="No channels."
          columns={[
            { title: "Channel", cell: (r) => <a href={link("channels", s(r.name))}>{s(r.name)}</a> },
            ...["prefetch_count", "consumer_count", "messages_unacknowledged", "confirm", "transactional"].map((key) => ({ title: key.replace(/_/g, " "), cell: (r: Row) => cell(r, key) })),
          ]}
        />
      </Section>
      {changes && (
        <Section title="Close this connection">
          <ActionForm
            name="close-connection"
            label="Force close"
            action={async (form) => {
              const reason = str(form, "reason");
              await fetchClose(session, name, reason);
              location.hash = link("connections");
            }}
          >
            <Field label="Reason"><input name="reason" value="Closed via management plugin" /></Field>
          </ActionForm>
        </Section>
      )}
    </div>
  );
}

/** DELETE with RabbitMQ's X-Reason header, the text the client gets in its connection.close. */
async function fetchClose(session: { username: string; password: string }, name: string, reason: string): Promise<void> {
  const response = await fetch(apiPath("connections", name), { method: "DELETE", credentials: "omit", headers: { Authorization: authHeader(session.username, session.password), "X-Reason": reason } });
  if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`);
}

export function ChannelsPage() {
  const list = useGet<Row[]>("/api/channels");
  return (
    <div>
      <h1>Channels</h1>
      {list.error && <p class="error">{list.error}</p>}
      <Table
        rows={list.data ?? []}
        empty="No channels."
        columns={[
          { title: "Channel", cell: (r) => <a href={link("channels", s(r.name))}>{s(r.name)}</a> },
          ...["vhost", "user", "prefetch_count", "consumer_count", "messages_unacknowledged"].map((key) => ({ title: key.replace(/_/g, " "), cell: (r: Row) => cell(r, key) })),
        ]}
      />
    </div>
  );
}

export function ChannelPage({ name }: { name: string }) {
  const channel = useGet<Row>(`${apiPath("channels", name)}?${WINDOW}`);
  const c = channel.data;
  const vhost = c ? s(c.vhost) : null;
  const consumers = useGet<Row[]>(vhost === null ? null : apiPath("consumers", vhost));
  if (channel.error) return <p class="error">{channel.error === "404: Object Not Found" ? "This channel is closed." : channel.error}</p>;
  if (!c) return <p class="muted">Loading…</p>;
  const connection = s((c.connection_details as Row | undefined)?.name);
  const mine = (consumers.data ?? []).filter((row) => s((row.channel_details as Row | undefined)?.name) === name);
  return (
    <div>
      <h1>Channel <span class="name">{name}</span></h1>
      <p>Connection <a href={link("connections", connection)}>{connection}</a></p>
      <Facts id="channel-facts" row={c} keys={["user", "vhost", "number", "state", "prefetch_count", "global_prefetch_count", "consumer_count", "messages_unacknowledged", "messages_unconfirmed", "confirm", "transactional"]} />
      <div class="charts"><RatesChart stats={c.message_stats as Row | undefined} keys={[["publish", "Publish"], ["confirm", "Confirm"], ["deliver_get", "Deliver / get"], ["ack", "Ack"]]} /></div>
      <Section title="Consumers">
        <Table
          rows={mine}
          empty="No consumers."
          columns={[
            { title: "Queue", cell: (r) => { const q = r.queue as Row; return <a href={link("queues", s(q.vhost), s(q.name))}>{s(q.name)}</a>; } },
            ...["consumer_tag", "ack_required", "exclusive", "prefetch_count", "arguments"].map((key) => ({ title: key.replace(/_/g, " "), cell: (r: Row) => cell(r, key) })),
          ]}
        />
      </Section>
    </div>
  );
}

export function VhostsPage() {
  const { session } = useCtx();
  const [bump, setBump] = useState(0);
  const list = useGet<Row[]>("/api/vhosts", bump);
  return (
    <div>
      <h1>Virtual hosts</h1>
      {list.error && <p class="error">{list.error}</p>}
      <Table
        rows={list.data ?? []}
        columns={[
          { title: "Name", cell: (r) => <a href={link("vhosts", s(r.name))}>{s(r.name)}</a> },
          ...["messages", "description", "tracing"].map((key) => ({ title: key, cell: (r: Row) => cell(r, key) })),
        ]}
      />
      <Section title="Add a virtual host">
        <ActionForm
          name="add-vhost"
          label="Add virtual host"
          action={async (form) => {
            const name = str(form, "name");
            await call(session, "PUT", apiPath("vhosts", name), { description: str(form, "description") });
            setBump(bump + 1);
            return `Virtual host ${name} added.`;
          }}
        >
          <Field label="Name"><input name="name" required /></Field>
          <Field label="Description"><input name="description" /></Field>
        </ActionForm>
      </Section>
    </div>
  );
}

export function VhostPage({ name }: { name: string }) {
  const { session } = useCtx();
  const vhost = useGet<Row>(apiPath("vhosts", name));
  if (vhost.error) return <p class="error">{vhost.error}</p>;
  if (!vhost.data) return <p class="muted">Loading…</p>;
  return (
    <div>
      <h1>Virtual host <span class="name">{name}</span></h1>
      <Facts row={vhost.data} keys={["description", "tags", "default_queue_type", "tracing", "messages"]} />
      <PermissionsSection vhost={name} />
      <LimitsSection base={apiPath("vhost-limits", name)} names={["max-connections", "max-queues"]} />
      <Section title="Delete this virtual host">
        <ActionForm name="delete-vhost" label="Delete" action={async () => { if (!confirm(`Delete virtual host ${name}?`)) return "Not deleted."; await call(session, "DELETE", apiPath("vhosts", name)); location.hash = link("vhosts"); }}>{null}</ActionForm>
      </Section>
    </div>
  );
}

export function PoliciesPage() {
  const { session, vhost } = useCtx();
  const [bump, setBump] = useState(0);
  const list = useGet<Row[]>(apiPath("policies", vhost), bump);
  return (
    <div>
      <h1>Policies</h1>
      {list.error && <p class="error">{list.error}</p>}
      <Table
        rows={list.data ?? []}
        empty="No policies."
        columns={[
          ...["name", "pattern", "apply-to", "priority", "definition"].map((key) => ({ title: key, cell: (r: Row) => cell(r, key) })),
          { title: "", cell: (r: Row) => <button name="delete-policy" onClick={() => void call(session, "DELETE", apiPath("policies", vhost, s(r.name))).then(() => setBump(bump + 1))}>Delete</button> },
        ]}
      />
      <Section title="Add / update a policy">
        <ActionForm
          name="add-policy"
          label="Add / update policy"
          action={async (form) => {
            const name = str(form, "name");
            await call(session, "PUT", apiPath("policies", vhost, name), {
              pattern: str(form, "pattern"),
              "apply-to": str(form, "apply-to"),
              priority: Number(str(form, "priority") || "0"),
              definition: jsonObject(str(form, "definition")),
            });
            setBump(bump + 1);
            return `Policy ${name} set.`;
          }}
        >
          <Field label="Name"><input name="name" required /></Field>
          <Field label="Pattern"><input name="pattern" placeholder="^amq\." required /></Field>
          <Field label="Apply to">
            <select name="apply-to">
              <option value="all">Exchanges and queues</option>
              <option value="exchanges">Exchanges</option>
              <option value="queues">Queues</option>
              <option value="classic_queues">Classic queues</option>
              <option value="quorum_queues">Quorum queues</option>
              <option value="streams">Streams</option>
            </select>
          </Field>
          <Field label="Priority"><input name="priority" value="0" size={4} /></Field>
          <Field label="Definition (JSON)"><textarea name="definition" rows={2} placeholder='{"max-length": 1000}' /></Field>
        </ActionForm>
      </Section>
    </div>
  );
}
