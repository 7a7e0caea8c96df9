// Every call goes to the public management API with HTTP Basic credentials, as RabbitMQ's UI does.
export interface Session {
  username: string;
  password: string;
  tags: string[];
}

export class ApiError extends Error {
  constructor(
    public status: number,
    public reason: string,
  ) {
    super(`${status}: ${reason}`);
  }
}

const KEY = "warrenmq.session";

export function loadSession(): Session | null {
  const raw = sessionStorage.getItem(KEY);
  return raw ? (JSON.parse(raw) as Session) : null;
}

export function saveSession(session: Session | null): void {
  if (session) sessionStorage.setItem(KEY, JSON.stringify(session));
  else sessionStorage.removeItem(KEY);
}

export function authHeader(username: string, password: string): string {
  const bytes = new TextEncoder().encode(`${username}:${password}`);
  return "Basic " + btoa(String.fromCharCode(...bytes));
}

export async function call<T>(session: Pick<Session, "username" | "password">, method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(path, {
    method,
    // "omit": a 401 with RabbitMQ's Basic challenge then reaches this code instead of the browser's own
    // login pop-up (which Chromium shows for same-origin requests); the Authorization header is still sent.
    credentials: "omit",
    headers: {
      Authorization: authHeader(session.username, session.password),
      ...(body === undefined ? {} : { "Content-Type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const data: unknown = text ? JSON.parse(text) : null;
  if (!response.ok) {
    const reason = (data as { reason?: unknown } | null)?.reason;
    throw new ApiError(response.status, typeof reason === "string" ? reason : JSON.stringify(reason ?? response.statusText));
  }
  return data as T;
}

/** Tags as RabbitMQ's UI reads them: monitoring alone sees but cannot change. */
export function canChange(tags: string[]): boolean {
  return tags.some((tag) => ["administrator", "management", "policymaker"].includes(tag));
}

export function isAdmin(tags: string[]): boolean {
  return tags.includes("administrator");
}

export function parseTags(tags: unknown): string[] {
  if (Array.isArray(tags)) return tags.map(String);
  if (typeof tags === "string") return tags.split(",").map((t) => t.trim()).filter(Boolean);
  return [];
}
