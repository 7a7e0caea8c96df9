import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ChannelPage, ChannelsPage, ConnectionPage, ConnectionsPage, PoliciesPage, VhostPage, VhostsPage } from "./admin";
import { call, canChange, isAdmin, loadSession, parseTags, saveSession, type Session } from "./api";
import { ExchangePage, ExchangesPage } from "./exchanges";
import { AppCtx, useGet } from "./hooks";
import { MessagesPage } from "./messages";
import { OverviewPage } from "./overview";
import { QueuePage, QueuesPage } from "./queues";
import { UserPage, UsersPage } from "./users";
import { link, parseHash } from "./routes";
import "./style.css";

function Login({ onLogin }: { onLogin: (session: Session) => void }) {
  const [error, setError] = useState<string | null>(null);
  return (
    <form
      class="login"
      onSubmit={(event) => {
        event.preventDefault();
        const data = new FormData(event.currentTarget);
        const credentials = { username: String(data.get("username")), password: String(data.get("password")) };
        call<{ tags: unknown }>(credentials, "GET", "/api/whoami").then(
          (me) => onLogin({ ...credentials, tags: parseTags(me.tags) }),
          () => setError("Login failed"),
        );
      }}
    >
      <h1>WarrenMQ</h1>
      <label>Username <input name="username" autocomplete="username" required /></label>
      <label>Password <input name="password" type="password" autocomplete="current-password" required /></label>
      <button type="submit">Login</button>
      {error && <p class="error">{error}</p>}
    </form>
  );
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const changed = () => setHash(location.hash);
    addEventListener("hashchange", changed);
    // Effects run after paint: a hash changed between the first render and this subscription (a link
    // followed at once, a test navigating right after login) fired no event we heard, so read it now.
    changed();
    return () => removeEventListener("hashchange", changed);
  }, []);
  return hash;
}

const TABS: [string, string][] = [
  ["overview", "Overview"],
  ["connections", "Connections"],
  ["channels", "Channels"],
  ["exchanges", "Exchanges"],
  ["queues", "Queues"],
  ["topology", "Topology"],
  ["messages", "Messages"],
];
const ADMIN_TABS: [string, string][] = [
  ["users", "Users"],
  ["vhosts", "Virtual hosts"],
  ["policies", "Policies"],
];

// The graph's layout engine (elkjs) is most of the bundle: load it only when the topology is opened.
function LazyTopology({ initialFilter }: { initialFilter: string }) {
  const [module, setModule] = useState<typeof import("./topology") | null>(null);
  useEffect(() => {
    void import("./topology").then(setModule);
  }, []);
  return module ? <module.TopologyPage initialFilter={initialFilter} /> : <p class="muted">Loading…</p>;
}

function Page({ hash }: { hash: string }) {
  const [path, query = ""] = hash.split("?");
  const { page, args } = parseHash(path);
  const key = `${page}/${args.join("/")}`;
  if (page === "queues" && args.length === 2) return <QueuePage key={key} vhost={args[0]} name={args[1]} />;
  if (page === "exchanges" && args.length === 2) return <ExchangePage key={key} vhost={args[0]} name={args[1]} />;
  if (args.length === 1) {
    const detail: Record<string, (p: { name: string }) => preact.JSX.Element> = { connections: ConnectionPage, channels: ChannelPage, users: UserPage, vhosts: VhostPage };
    const Detail = detail[page];
    if (Detail) return <Detail key={key} name={args[0]} />;
  }
  const pages: Record<string, () => preact.JSX.Element> = {
    overview: OverviewPage,
    connections: ConnectionsPage,
    channels: ChannelsPage,
    exchanges: ExchangesPage,
    queues: QueuesPage,
    topology: () => <LazyTopology initialFilter={decodeURIComponent(query)} />,
    messages: () => <MessagesPage initialQuery={query} />,
    users: UsersPage,
    vhosts: VhostsPage,
    policies: PoliciesPage,
  };
  const Shown = pages[page];
  return Shown ? <Shown /> : <p class="error">Page not found: {page}</p>;
}

function Shell({ session, onLogout }: { session: Session; onLogout: () => void }) {
  const hash = useHash();
  const [vhost, setVhost] = useState(() => localStorage.getItem("warrenmq.vhost") ?? "/");
  const [refreshMs, setRefreshMs] = useState(5000);
  const ctx = { session, vhost, refreshMs, changes: canChange(session.tags) };
  const current = parseHash(hash.split("?")[0]).page;
  return (
    <AppCtx.Provider value={ctx}>
      <header>
        <b class="brand">WarrenMQ</b>
        <nav>
          {[...TABS, ...(isAdmin(session.tags) ? ADMIN_TABS : [])].map(([page, title]) => (
            <a href={link(page)} class={current === page ? "active" : ""}>{title}</a>
          ))}
        </nav>
        <span class="who">
          <VhostSelect vhost={vhost} onChange={(v) => { localStorage.setItem("warrenmq.vhost", v); setVhost(v); }} />
          <select name="refresh" value={String(refreshMs)} onChange={(e) => setRefreshMs(Number(e.currentTarget.value))}>
            <option value="5000">Refresh every 5 s</option>
            <option value="30000">Refresh every 30 s</option>
            <option value="0">Refresh paused</option>
          </select>
          User <b>{session.username}</b> ({session.tags.join(", ") || "no tags"}) <button name="logout" onClick={onLogout}>Log out</button>
        </span>
      </header>
      {/* data-route names the route on screen, so a test waits for it instead of racing the hashchange. */}
      <main data-route={hash}>
        <Page hash={hash} />
      </main>
    </AppCtx.Provider>
  );
}

function VhostSelect({ vhost, onChange }: { vhost: string; onChange: (vhost: string) => void }) {
  const vhosts = useGet<{ name: string }[]>("/api/vhosts");
  const names = vhosts.data?.map((v) => v.name) ?? [vhost];
  return (
    <select name="vhost" value={vhost} onChange={(e) => onChange(e.currentTarget.value)}>
      {names.map((n) => <option value={n}>Virtual host {n}</option>)}
    </select>
  );
}

function App() {
  // No API call before login: a fresh visit logs no failed request.
  const [session, setSession] = useState<Session | null>(loadSession);
  if (!session) return <Login onLogin={(s) => { saveSession(s); setSession(s); }} />;
  return <Shell session={session} onLogout={() => { saveSession(null); setSession(null); }} />;
}

render(<App />, document.getElementById("app")!);
