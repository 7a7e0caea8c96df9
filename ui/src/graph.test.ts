import { describe, expect, it } from "vitest";
import { buildGraph, highlight } from "./graph";
import { apiPath, link, parseHash } from "./routes";
import { canChange, parseTags } from "./api";

const exchanges = [
  { name: "", type: "direct" },
  { name: "main", type: "direct", arguments: { "alternate-exchange": "ae" } },
  { name: "ae", type: "fanout" },
  { name: "dlx", type: "fanout" },
  { name: "hub", type: "headers" },
];
const queues = [
  { name: "orders", arguments: { "x-dead-letter-exchange": "dlx" } },
  { name: "lost" },
  { name: "dead", effective_policy_definition: {} },
];
const bindings = [
  { source: "", destination: "orders", destination_type: "queue" as const, routing_key: "orders" },
  { source: "main", destination: "orders", destination_type: "queue" as const, routing_key: "order.new" },
  { source: "main", destination: "hub", destination_type: "exchange" as const, routing_key: "", arguments: { "x-match": "any", kind: "a" } },
  { source: "ae", destination: "lost", destination_type: "queue" as const, routing_key: "" },
  { source: "dlx", destination: "dead", destination_type: "queue" as const, routing_key: "" },
];

describe("buildGraph", () => {
  it("draws bindings, exchange-to-exchange, alternate and dead-letter edges, not the default exchange", () => {
    const graph = buildGraph(exchanges, queues, bindings);
    expect(graph.nodes.map((n) => n.id)).not.toContain("e:");
    const kinds = graph.edges.map((e) => [e.source, e.target, e.kind, e.label]);
    expect(kinds).toContainEqual(["e:main", "q:orders", "binding", "order.new"]);
    expect(kinds).toContainEqual(["e:main", "e:hub", "binding", "[any: kind=a]"]);
    expect(kinds).toContainEqual(["e:main", "e:ae", "alternate", "alternate"]);
    expect(kinds).toContainEqual(["q:orders", "e:dlx", "dead-letter", "dead-letter"]);
    expect(graph.edges).toHaveLength(6);
  });

  it("filters by name keeping neighbours, and caps the node count", () => {
    const graph = buildGraph(exchanges, queues, bindings, "lost");
    expect(graph.nodes.map((n) => n.name).sort()).toEqual(["ae", "lost"]);
    const capped = buildGraph(exchanges, queues, bindings, "", 3);
    expect(capped.nodes).toHaveLength(3);
    expect(capped.hidden).toBe(4);
  });

  it("highlights the hops of a dry-run route", () => {
    const graph = buildGraph(exchanges, queues, bindings);
    const lit = highlight(graph, "main", [
      { source: "main", destination: "ae", destination_type: "exchange", alternate: true },
      { source: "ae", destination: "lost", destination_type: "queue", alternate: false },
    ]);
    expect([...lit.nodes].sort()).toEqual(["e:ae", "e:main", "q:lost"]);
    expect(lit.edges.size).toBe(2);
  });
});

describe("routes", () => {
  it("parses and builds RabbitMQ's hash URLs", () => {
    expect(parseHash("")).toEqual({ page: "overview", args: [] });
    expect(parseHash("#/queues/%2F/orders")).toEqual({ page: "queues", args: ["/", "orders"] });
    expect(link("exchanges", "/", "amq.direct")).toBe("#/exchanges/%2F/amq.direct");
    expect(apiPath("queues", "/", "a b")).toBe("/api/queues/%2F/a%20b");
  });
});

describe("tags", () => {
  it("lets monitoring see but not change", () => {
    expect(canChange(parseTags("monitoring"))).toBe(false);
    expect(canChange(parseTags(["administrator"]))).toBe(true);
    expect(canChange(parseTags("management, monitoring"))).toBe(true);
  });
});

describe("edge widths from live rates", () => {
  it("caps an edge's rate by what enters either end; dead-letter edges carry none", async () => {
    const { edgeRates, edgeWidth } = await import("./graph");
    const rated = [
      { name: "main", type: "direct", arguments: { "alternate-exchange": "ae" }, message_stats: { publish_in_details: { rate: 40 } } },
      { name: "ae", type: "fanout", message_stats: { publish_in_details: { rate: 2 } } },
      { name: "dlx", type: "fanout" },
    ];
    const rq = [
      { name: "orders", arguments: { "x-dead-letter-exchange": "dlx" }, message_stats: { publish_details: { rate: 30 } } },
      { name: "lost", message_stats: { publish_details: { rate: 2 } } },
    ];
    const rb = [
      { source: "main", destination: "orders", destination_type: "queue" as const, routing_key: "k" },
      { source: "ae", destination: "lost", destination_type: "queue" as const, routing_key: "" },
    ];
    const graph = buildGraph(rated, rq, rb);
    const rates = edgeRates(graph, rated, rq);
    const byPair = Object.fromEntries(graph.edges.map((e) => [`${e.kind}:${e.source}->${e.target}`, rates.get(e.id)]));
    expect(byPair).toEqual({
      "binding:e:main->q:orders": 30,
      "binding:e:ae->q:lost": 2,
      "alternate:e:main->e:ae": 2,
      "dead-letter:q:orders->e:dlx": 0,
    });
    expect(edgeWidth(0)).toBe(1.5);
    expect(edgeWidth(3)).toBe(3.5);
    expect(edgeWidth(1e6)).toBe(9);
  });
});
