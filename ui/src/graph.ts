// The topology graph's model: exchanges and queues of one vhost as nodes, bindings, alternate-exchange and
// dead-letter links as edges. Pure, so it is unit-tested; layout (elkjs) and drawing live in Topology.tsx.
export interface ExchangeRow {
  name: string;
  type: string;
  arguments?: Record<string, unknown>;
  message_stats?: { publish_in_details?: { rate?: number } };
}
export interface QueueRow {
  name: string;
  arguments?: Record<string, unknown>;
  effective_policy_definition?: Record<string, unknown>;
  message_stats?: { publish_details?: { rate?: number } };
}
export interface BindingRow {
  source: string;
  destination: string;
  destination_type: "queue" | "exchange";
  routing_key: string;
  arguments?: Record<string, unknown>;
}
export type EdgeKind = "binding" | "alternate" | "dead-letter";
export interface GraphNode {
  id: string;
  kind: "exchange" | "queue";
  name: string;
  label: string;
}
export interface GraphEdge {
  id: string;
  source: string;
  target: string;
  kind: EdgeKind;
  label: string;
}
export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
  /** Nodes left out because the graph would be too large to lay out quickly. */
  hidden: number;
}

export const exchangeId = (name: string) => `e:${name}`;
export const queueId = (name: string) => `q:${name}`;

function bindingLabel(binding: BindingRow): string {
  const args = binding.arguments ?? {};
  const keys = Object.keys(args);
  if (keys.length === 0) return binding.routing_key;
  const match = keys
    .filter((key) => key !== "x-match")
    .map((key) => `${key}=${String(args[key])}`)
    .join(",");
  const head = binding.routing_key ? `${binding.routing_key} ` : "";
  return `${head}[${String(args["x-match"] ?? "all")}: ${match}]`;
}

function text(value: unknown): string | null {
  return typeof value === "string" ? value : null;
}

export function buildGraph(
  exchanges: ExchangeRow[],
  queues: QueueRow[],
  bindings: BindingRow[],
  filter = "",
  limit = 150,
): Graph {
  // The default exchange binds every queue implicitly; drawing it would hide everything else.
  const shownExchanges = exchanges.filter((e) => e.name !== "");
  const nodes = new Map<string, GraphNode>();
  for (const e of shownExchanges) nodes.set(exchangeId(e.name), { id: exchangeId(e.name), kind: "exchange", name: e.name, label: `${e.name} (${e.type})` });
  for (const q of queues) nodes.set(queueId(q.name), { id: queueId(q.name), kind: "queue", name: q.name, label: q.name });
  const edges: GraphEdge[] = [];
  const add = (source: string, target: string, kind: EdgeKind, label: string) => {
    if (nodes.has(source) && nodes.has(target)) edges.push({ id: `${kind}:${source}->${target}:${edges.length}`, source, target, kind, label });
  };
  for (const b of bindings) {
    if (b.source === "") continue;
    const target = b.destination_type === "queue" ? queueId(b.destination) : exchangeId(b.destination);
    add(exchangeId(b.source), target, "binding", bindingLabel(b));
  }
  for (const e of shownExchanges) {
    const alternate = text(e.arguments?.["alternate-exchange"]);
    if (alternate) add(exchangeId(e.name), exchangeId(alternate), "alternate", "alternate");
  }
  for (const q of queues) {
    const dlx = text(q.arguments?.["x-dead-letter-exchange"]) ?? text(q.effective_policy_definition?.["dead-letter-exchange"]);
    if (dlx) add(queueId(q.name), exchangeId(dlx), "dead-letter", "dead-letter");
  }
  // A filter keeps matching nodes and their neighbours, so a name's routes stay visible.
  let keep = new Set(nodes.keys());
  const needle = filter.trim().toLowerCase();
  if (needle) {
    const matched = new Set([...nodes.values()].filter((n) => n.name.toLowerCase().includes(needle)).map((n) => n.id));
    keep = new Set(matched);
    for (const edge of edges) {
      if (matched.has(edge.source)) keep.add(edge.target);
      if (matched.has(edge.target)) keep.add(edge.source);
    }
  }
  const kept = [...nodes.values()].filter((n) => keep.has(n.id));
  const shown = kept.slice(0, limit);
  const shownIds = new Set(shown.map((n) => n.id));
  return {
    nodes: shown,
    edges: edges.filter((e) => shownIds.has(e.source) && shownIds.has(e.target)),
    hidden: kept.length - shown.length,
  };
}

export interface Hop {
  source: string;
  destination: string;
  destination_type: "queue" | "exchange";
  alternate: boolean;
}

/** The edges and nodes a dry-run route's hops light up. */
export function highlight(graph: Graph, start: string, hops: Hop[]): { nodes: Set<string>; edges: Set<string> } {
  const nodes = new Set<string>([exchangeId(start)]);
  const edges = new Set<string>();
  for (const hop of hops) {
    const source = exchangeId(hop.source);
    const target = hop.destination_type === "queue" ? queueId(hop.destination) : exchangeId(hop.destination);
    nodes.add(source);
    nodes.add(target);
    const kind: EdgeKind = hop.alternate ? "alternate" : "binding";
    for (const edge of graph.edges) if (edge.source === source && edge.target === target && edge.kind === kind) edges.add(edge.id);
  }
  return { nodes, edges };
}

/** Messages per second along each edge, from the live rates the API gives per object (there is no per-binding
 *  counter): what enters the source exchange, capped by what enters the destination (a queue's publish rate, an
 *  exchange's publish_in), so an edge is never drawn thicker than the traffic at either end. */
export function edgeRates(graph: Graph, exchanges: ExchangeRow[], queues: QueueRow[]): Map<string, number> {
  const rate = new Map<string, number>();
  for (const e of exchanges) rate.set(exchangeId(e.name), e.message_stats?.publish_in_details?.rate ?? 0);
  for (const q of queues) rate.set(queueId(q.name), q.message_stats?.publish_details?.rate ?? 0);
  const out = new Map<string, number>();
  for (const edge of graph.edges) {
    // A dead-letter edge starts at a queue, whose publish rate says nothing about what it dead-letters.
    out.set(edge.id, edge.kind === "dead-letter" ? 0 : Math.min(rate.get(edge.source) ?? 0, rate.get(edge.target) ?? 0));
  }
  return out;
}

/** Stroke width for a rate: 1.5 px idle, growing with the logarithm of the rate, at most 9 px. */
export function edgeWidth(rate: number): number {
  return Math.min(9, 1.5 + Math.log2(1 + Math.max(0, rate)));
}
