import ELK from "elkjs/lib/elk.bundled.js";
import type { ElkNode, ElkExtendedEdge } from "elkjs/lib/elk-api";
import { useEffect, useMemo, useState } from "preact/hooks";
import { call } from "./api";
import { buildGraph, edgeRates, edgeWidth, highlight, type BindingRow, type ExchangeRow, type Graph, type Hop, type QueueRow } from "./graph";
import { useCtx, useGet } from "./hooks";
import { apiPath, link } from "./routes";

const elk = new ELK();
const CHAR_PX = 7;

interface Placed {
  nodes: Map<string, { x: number; y: number; width: number; height: number }>;
  edges: Map<string, { points: { x: number; y: number }[]; label: { x: number; y: number } | null }>;
  width: number;
  height: number;
}

async function layout(graph: Graph): Promise<Placed> {
  const root: ElkNode = {
    id: "root",
    layoutOptions: { "elk.algorithm": "layered", "elk.direction": "RIGHT", "elk.layered.spacing.nodeNodeBetweenLayers": "90", "elk.spacing.nodeNode": "24", "elk.edgeRouting": "POLYLINE", "elk.edgeLabels.inline": "true" },
    children: graph.nodes.map((n) => ({ id: n.id, width: Math.max(80, n.label.length * CHAR_PX + 24), height: 32 })),
    // ELK places the binding-key labels itself, so they never sit under a node.
    edges: graph.edges.map(
      (e): ElkExtendedEdge => ({
        id: e.id,
        sources: [e.source],
        targets: [e.target],
        labels: e.label ? [{ text: e.label, width: e.label.length * 6 + 4, height: 12 }] : [],
      }),
    ),
  };
  const out = await elk.layout(root);
  const nodes = new Map((out.children ?? []).map((c) => [c.id, { x: c.x ?? 0, y: c.y ?? 0, width: c.width ?? 0, height: c.height ?? 0 }]));
  const edges = new Map(
    (out.edges ?? []).map((e) => {
      const section = e.sections?.[0];
      const points = section ? [section.startPoint, ...(section.bendPoints ?? []), section.endPoint] : [];
      const label = e.labels?.[0];
      return [e.id, { points, label: label ? { x: (label.x ?? 0) + (label.width ?? 0) / 2, y: (label.y ?? 0) + 10 } : null }];
    }),
  );
  return { nodes, edges, width: (out.width ?? 0) + 20, height: (out.height ?? 0) + 20 };
}

export function TopologyPage({ initialFilter }: { initialFilter: string }) {
  const { session, vhost } = useCtx();
  const [filter, setFilter] = useState(initialFilter);
  const exchanges = useGet<ExchangeRow[]>(apiPath("exchanges", vhost));
  const queues = useGet<QueueRow[]>(apiPath("queues", vhost));
  const bindings = useGet<BindingRow[]>(apiPath("bindings", vhost));
  // Auto-refresh brings new arrays every 5 s: lay out again only when the topology itself changed.
  const signature = JSON.stringify([
    exchanges.data?.map((e) => [e.name, e.type, e.arguments]),
    queues.data?.map((q) => [q.name, q.arguments, q.effective_policy_definition]),
    bindings.data,
  ]);
  const graph = useMemo(
    () => (exchanges.data && queues.data && bindings.data ? buildGraph(exchanges.data, queues.data, bindings.data, filter) : null),
    [signature, filter],
  );
  const [placed, setPlaced] = useState<Placed | null>(null);
  const [route, setRoute] = useState<{ start: string; hops: Hop[]; queues: string[] } | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    if (!graph) return;
    let live = true;
    layout(graph).then((p) => live && setPlaced(p), (e: Error) => live && setError(e.message));
    return () => {
      live = false;
    };
  }, [graph]);
  const lit = graph && route ? highlight(graph, route.start, route.hops) : null;
  // Widths follow the live rates on every refresh, without laying the graph out again.
  const rates = graph ? edgeRates(graph, exchanges.data ?? [], queues.data ?? []) : new Map<string, number>();
  const routable = (exchanges.data ?? []).map((e) => e.name || "amq.default");
  return (
    <div>
      <h1>Topology <span class="muted">of {vhost}</span></h1>
      <div class="filters">
        <input name="graph-filter" placeholder="Filter by name" value={filter} onInput={(e) => setFilter(e.currentTarget.value)} />
        <span class="legend"><i class="binding" /> binding <i class="alternate" /> alternate exchange <i class="dead-letter" /> dead letter</span>
      </div>
      <form
        class="action"
        name="route"
        onSubmit={(event) => {
          event.preventDefault();
          const data = new FormData(event.currentTarget);
          const start = String(data.get("exchange"));
          const headersText = String(data.get("headers") ?? "").trim();
          call<{ queues: string[]; hops: Hop[] }>(session, "POST", `${apiPath("exchanges", vhost, start)}/route`, {
            routing_key: String(data.get("routing_key") ?? ""),
            properties: headersText ? { headers: JSON.parse(headersText) as unknown } : {},
          }).then(
            (answer) => {
              setRoute({ start: start === "amq.default" ? "" : start, hops: answer.hops, queues: answer.queues });
              setError(null);
            },
            (e: Error) => setError(e.message),
          );
        }}
      >
        <b>Route a test key</b>
        <select name="exchange">{routable.map((n) => <option>{n}</option>)}</select>
        <input name="routing_key" placeholder="routing key" />
        <input name="headers" placeholder='headers {"k": "v"}' />
        <button type="submit">Route</button>
        {route && <span id="route-result">{route.queues.length ? `→ ${route.queues.join(", ")}` : "unroutable"}</span>}
      </form>
      {(error ?? exchanges.error ?? queues.error) && <p class="error">{error ?? exchanges.error ?? queues.error}</p>}
      {graph && graph.hidden > 0 && <p class="muted">{graph.hidden} more objects not drawn: filter by name to see them.</p>}
      {graph && placed && (
        <svg class="topology" width={placed.width} height={placed.height} viewBox={`0 0 ${placed.width} ${placed.height}`}>
          <defs>
            <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="9" markerHeight="9" orient="auto-start-reverse">
              <path d="M 0 0 L 10 5 L 0 10 z" fill="context-stroke" />
            </marker>
          </defs>
          {graph.edges.map((edge) => {
            const placedEdge = placed.edges.get(edge.id);
            const points = placedEdge?.points ?? [];
            if (points.length < 2) return null;
            const label = placedEdge?.label ?? points[0];
            const on = lit?.edges.has(edge.id) ?? false;
            return (
              <g class={`edge ${edge.kind}${on ? " hl" : ""}`} data-source={edge.source} data-target={edge.target} data-rate={(rates.get(edge.id) ?? 0).toFixed(1)}>
                <polyline points={points.map((p) => `${p.x},${p.y}`).join(" ")} marker-end="url(#arrow)" style={on ? undefined : { strokeWidth: edgeWidth(rates.get(edge.id) ?? 0) }} />
                {edge.label && <text x={label.x} y={label.y} text-anchor="middle">{edge.label}</text>}
              </g>
            );
          })}
          {graph.nodes.map((node) => {
            const box = placed.nodes.get(node.id);
            if (!box) return null;
            const on = lit?.nodes.has(node.id) ?? false;
            const target = node.kind === "queue" ? link("queues", vhost, node.name) : link("exchanges", vhost, node.name);
            return (
              <g class={`node ${node.kind}${on ? " hl" : ""}`} data-id={node.id} onClick={() => (location.hash = target)}>
                <rect x={box.x} y={box.y} width={box.width} height={box.height} rx={node.kind === "queue" ? 4 : 16} />
                <text x={box.x + box.width / 2} y={box.y + box.height / 2 + 4} text-anchor="middle">{node.label}</text>
              </g>
            );
          })}
        </svg>
      )}
    </div>
  );
}
