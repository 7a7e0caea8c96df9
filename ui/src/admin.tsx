import { call } from "./api";
import { useCtx, useGet } from "./hooks";
import { apiPath } from "./routes";
import { Table, fmt } from "./widgets";

type Row = Record<string, unknown>;
const s = (value: unknown) => (value === undefined || value === null ? "" : typeof value === "object" ? JSON.stringify(value) : String(value));

function ListPage({ title, path, columns, action }: { title: string; path: string; columns: string[]; action?: { label: string; run: (row: Row) => Promise<unknown> } }) {
  const list = useGet<Row[]>(path);
  return (
    <div>
      <h1>{title}</h1>
      {list.error && <p class="error">{list.error}</p>}
      <Table
        rows={list.data ?? []}
        columns={[
          ...columns.map((key) => ({ title: key.replace(/_/g, " "), cell: (row: Row) => (typeof row[key] === "number" ? fmt(row[key]) : s(row[key])) })),
          ...(action ? [{ title: "", cell: (row: Row) => <button onClick={() => void action.run(row)}>{action.label}</button> }] : []),
        ]}
      />
    </div>
  );
}

export function ConnectionsPage() {
  const { session, changes } = useCtx();
  return (
    <ListPage
      title="Connections"
      path="/api/connections"
      columns={["name", "vhost", "user", "state", "channels", "protocol", "client_properties"]}
      action={changes ? { label: "Force close", run: (row) => call(session, "DELETE", apiPath("connections", s(row.name))) } : undefined}
    />
  );
}

export const ChannelsPage = () => <ListPage title="Channels" path="/api/channels" columns={["name", "vhost", "user", "number", "prefetch_count", "consumer_count", "messages_unacknowledged"]} />;
export const UsersPage = () => <ListPage title="Users" path="/api/users" columns={["name", "tags"]} />;
export const VhostsPage = () => <ListPage title="Virtual hosts" path="/api/vhosts" columns={["name", "messages", "description", "tracing"]} />;
export function PoliciesPage() {
  const { vhost } = useCtx();
  return <ListPage title="Policies" path={apiPath("policies", vhost)} columns={["name", "pattern", "apply-to", "priority", "definition"]} />;
}
