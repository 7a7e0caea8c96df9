// Hash routes as RabbitMQ's UI spells them (#/queues/%2F/orders), so bookmarks carry over.
export interface Route {
  page: string;
  args: string[];
}

export function parseHash(hash: string): Route {
  const path = hash.replace(/^#/, "").replace(/^\//, "");
  if (path === "") return { page: "overview", args: [] };
  const [page, ...rest] = path.split("/");
  return { page, args: rest.map((part) => decodeURIComponent(part)) };
}

export function link(page: string, ...args: string[]): string {
  return "#/" + [page, ...args.map((part) => encodeURIComponent(part))].join("/");
}

/** The API path of one object: every segment percent-encoded ("/" vhost is %2F). */
export function apiPath(...parts: string[]): string {
  return "/api/" + parts.map((part, i) => (i === 0 ? part : encodeURIComponent(part))).join("/");
}
