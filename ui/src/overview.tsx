import { WINDOW } from "./chart";
import { TotalsCharts } from "./charts";
import { useGet } from "./hooks";
import { Section, Table, fmt } from "./widgets";

interface Overview {
  cluster_name?: string;
  rabbitmq_version?: string;
  object_totals?: Record<string, number>;
  queue_totals?: Record<string, unknown>;
  listeners?: { protocol: string; ip_address: string; port: number; node: string }[];
  message_stats?: Record<string, unknown>;
  ha_role?: string;
  ha_epoch?: number | null;
}
interface NodeRow {
  name: string;
  ha_role?: string;
  ha_epoch?: number | null;
  mem_used?: number;
  mem_limit?: number;
  mem_alarm?: boolean;
  disk_free_alarm?: boolean;
}
const mib = (bytes: number | undefined) => (typeof bytes === "number" ? `${(bytes / 2 ** 20).toFixed(0)} MiB` : "-");

export function OverviewPage() {
  const overview = useGet<Overview>(`/api/overview?${WINDOW}`);
  const nodes = useGet<NodeRow[]>("/api/nodes");
  const o = overview.data;
  if (overview.error) return <p class="error">{overview.error}</p>;
  if (!o) return <p class="muted">Loading…</p>;
  const totals = { ...o.queue_totals, ...o.object_totals };
  return (
    <div>
      <h1>Overview</h1>
      <p class="muted">
        {o.cluster_name} · version {o.rabbitmq_version}
        {o.ha_role && (
          <>
            {" · "}
            <span class={o.ha_role === "active" ? "ha-active" : "ha-standby"} id="ha-role">
              {o.ha_role === "active" ? `active node (epoch ${o.ha_epoch})` : "standby node"}
            </span>
          </>
        )}
      </p>
      <Section title="Totals">
        <div class="tiles" id="totals">
          {Object.entries(totals).filter(([, value]) => typeof value === "number").map(([key, value]) => (
            <div class="tile">
              <b>{fmt(value)}</b>
              <span>{key.replace(/_/g, " ")}</span>
            </div>
          ))}
        </div>
      </Section>
      <Section title="Last minute">
        <TotalsCharts stats={o.message_stats} lengths={o.queue_totals} />
      </Section>
      <Section title="Nodes">
        <Table
          rows={nodes.data ?? []}
          columns={[
            { title: "Name", cell: (n) => n.name },
            // High availability (a PostgreSQL store): which node of the pair this one is.
            ...(nodes.data?.some((n) => n.ha_role) ? [{ title: "Role", cell: (n: NodeRow) => (n.ha_role === "active" ? <b class="ha-active">active</b> : <span class="ha-standby">{n.ha_role}</span>) }] : []),
            { title: "Memory", cell: (n) => `${mib(n.mem_used)} of ${mib(n.mem_limit)} limit` },
            { title: "Alarms", cell: (n) => (n.mem_alarm || n.disk_free_alarm ? <span class="error">{[n.mem_alarm && "memory", n.disk_free_alarm && "disk"].filter(Boolean).join(", ")}</span> : "none") },
          ]}
        />
      </Section>
      <Section title="Listeners">
        <Table
          rows={o.listeners ?? []}
          columns={[
            { title: "Protocol", cell: (l) => l.protocol },
            { title: "Bound to", cell: (l) => l.ip_address },
            { title: "Port", cell: (l) => l.port },
          ]}
        />
      </Section>
    </div>
  );
}
