import { useState } from "preact/hooks";
import { call } from "./api";
import { useCtx, useGet } from "./hooks";
import { apiPath, link } from "./routes";
import { ActionForm, Field, Section, Table, str } from "./widgets";

interface UserRow {
  name: string;
  tags: string[] | string;
  password_hash?: string;
  hashing_algorithm?: string;
}
interface Permission {
  user: string;
  vhost: string;
  configure: string;
  write: string;
  read: string;
}
interface TopicPermission {
  user: string;
  vhost: string;
  exchange: string;
  write: string;
  read: string;
}
interface LimitRow {
  vhost?: string;
  user?: string;
  value: Record<string, number>;
}

const tagText = (tags: string[] | string) => (Array.isArray(tags) ? tags.join(", ") : tags);
export const TAGS = ["administrator", "monitoring", "policymaker", "management", "impersonator"];

export function UsersPage() {
  const { session } = useCtx();
  const [bump, setBump] = useState(0);
  const users = useGet<UserRow[]>("/api/users", bump);
  return (
    <div>
      <h1>Users</h1>
      {users.error && <p class="error">{users.error}</p>}
      <Table
        rows={users.data ?? []}
        columns={[
          { title: "Name", cell: (u) => <a href={link("users", u.name)}>{u.name}</a> },
          { title: "Tags", cell: (u) => tagText(u.tags) },
        ]}
      />
      <Section title="Add a user">
        <ActionForm
          name="add-user"
          label="Add user"
          action={async (form) => {
            const name = str(form, "username");
            await call(session, "PUT", apiPath("users", name), { password: str(form, "password"), tags: str(form, "tags") });
            setBump(bump + 1);
            return `User ${name} added.`;
          }}
        >
          <Field label="Username"><input name="username" required /></Field>
          <Field label="Password"><input name="password" type="password" autocomplete="new-password" /></Field>
          <Field label={`Tags (comma-separated: ${TAGS.join(", ")})`}><input name="tags" /></Field>
        </ActionForm>
      </Section>
    </div>
  );
}

/** Set a limit (``names`` are the keys the API accepts) or clear one, on ``base``/{name}. */
function LimitsForm({ base, names, onChange }: { base: string; names: string[]; onChange: () => void }) {
  const { session } = useCtx();
  return (
    <ActionForm
      name="set-limit"
      label="Set limit"
      action={async (form) => {
        const value = Number(str(form, "value"));
        await call(session, "PUT", `${base}/${encodeURIComponent(str(form, "limit"))}`, { value: Number.isFinite(value) && str(form, "value") !== "" ? value : str(form, "value") });
        onChange();
        return "Limit set.";
      }}
    >
      <Field label="Limit"><select name="limit">{names.map((n) => <option>{n}</option>)}</select></Field>
      <Field label="Value (-1: no limit)"><input name="value" size={8} required /></Field>
    </ActionForm>
  );
}

export function LimitsTable({ rows, base, onChange }: { rows: LimitRow[]; base: string; onChange: () => void }) {
  const { session } = useCtx();
  const limits = Object.entries(rows[0]?.value ?? {});
  return (
    <Table
      rows={limits}
      empty="No limits."
      columns={[
        { title: "Limit", cell: ([name]) => name },
        { title: "Value", cell: ([, value]) => String(value) },
        { title: "", cell: ([name]) => <button name={`clear-limit-${name}`} onClick={() => void call(session, "DELETE", `${base}/${encodeURIComponent(name)}`).then(onChange)}>Clear</button> },
      ]}
    />
  );
}

export function LimitsSection({ base, names }: { base: string; names: string[] }) {
  const [bump, setBump] = useState(0);
  const limits = useGet<LimitRow[]>(base, bump);
  const changed = () => setBump((b) => b + 1);
  return (
    <Section title="Limits">
      {limits.error && <p class="error">{limits.error}</p>}
      <LimitsTable rows={limits.data ?? []} base={base} onChange={changed} />
      <LimitsForm base={base} names={names} onChange={changed} />
    </Section>
  );
}

/** Permissions and topic permissions of one user (``user`` set) or of one vhost (``vhost`` set). */
export function PermissionsSection({ user, vhost }: { user?: string; vhost?: string }) {
  const { session } = useCtx();
  const [bump, setBump] = useState(0);
  const base = user !== undefined ? apiPath("users", user) : apiPath("vhosts", vhost ?? "/");
  const permissions = useGet<Permission[]>(`${base}/permissions`, bump);
  const topics = useGet<TopicPermission[]>(`${base}/topic-permissions`, bump);
  const vhosts = useGet<{ name: string }[]>("/api/vhosts");
  const users = useGet<UserRow[]>("/api/users");
  const clear = (path: string, body?: unknown) => void call(session, "DELETE", path, body).then(() => setBump(bump + 1));
  const other = (row: { user: string; vhost: string }) => (user !== undefined ? <a href={link("vhosts", row.vhost)}>{row.vhost}</a> : <a href={link("users", row.user)}>{row.user}</a>);
  const otherTitle = user !== undefined ? "Virtual host" : "User";
  const pick = user !== undefined ? (
    <Field label="Virtual host"><select name="vhost">{(vhosts.data ?? []).map((v) => <option>{v.name}</option>)}</select></Field>
  ) : (
    <Field label="User"><select name="user">{(users.data ?? []).map((u) => <option>{u.name}</option>)}</select></Field>
  );
  const target = (form: FormData) => [user !== undefined ? str(form, "vhost") : (vhost ?? "/"), user ?? str(form, "user")] as const;
  return (
    <>
      <Section title="Permissions">
        <Table
          rows={permissions.data ?? []}
          empty="No permissions."
          columns={[
            { title: otherTitle, cell: other },
            { title: "Configure", cell: (p) => p.configure },
            { title: "Write", cell: (p) => p.write },
            { title: "Read", cell: (p) => p.read },
            { title: "", cell: (p) => <button name="clear-permission" onClick={() => clear(apiPath("permissions", p.vhost, p.user))}>Clear</button> },
          ]}
        />
        <ActionForm
          name="set-permission"
          label="Set permission"
          action={async (form) => {
            const [v, u] = target(form);
            await call(session, "PUT", apiPath("permissions", v, u), { configure: str(form, "configure"), write: str(form, "write"), read: str(form, "read") });
            setBump(bump + 1);
            return "Permission set.";
          }}
        >
          {pick}
          <Field label="Configure regexp"><input name="configure" value=".*" /></Field>
          <Field label="Write regexp"><input name="write" value=".*" /></Field>
          <Field label="Read regexp"><input name="read" value=".*" /></Field>
        </ActionForm>
      </Section>
      <Section title="Topic permissions">
        <Table
          rows={topics.data ?? []}
          empty="No topic permissions."
          columns={[
            { title: otherTitle, cell: other },
            { title: "Exchange", cell: (p) => p.exchange },
            { title: "Write", cell: (p) => p.write },
            { title: "Read", cell: (p) => p.read },
            { title: "", cell: (p) => <button name="clear-topic-permission" onClick={() => clear(apiPath("topic-permissions", p.vhost, p.user), { exchange: p.exchange })}>Clear</button> },
          ]}
        />
        <ActionForm
          name="set-topic-permission"
          label="Set topic permission"
          action={async (form) => {
            const [v, u] = target(form);
            await call(session, "PUT", apiPath("topic-permissions", v, u), { exchange: str(form, "exchange"), write: str(form, "write"), read: str(form, "read") });
            setBump(bump + 1);
            return "Topic permission set.";
          }}
        >
          {pick}
          <Field label="Exchange"><input name="exchange" value="amq.topic" /></Field>
          <Field label="Write regexp"><input name="write" value=".*" /></Field>
          <Field label="Read regexp"><input name="read" value=".*" /></Field>
        </ActionForm>
      </Section>
    </>
  );
}

export function UserPage({ name }: { name: string }) {
  const { session } = useCtx();
  const [bump, setBump] = useState(0);
  const user = useGet<UserRow>(apiPath("users", name), bump);
  if (user.error) return <p class="error">{user.error}</p>;
  if (!user.data) return <p class="muted">Loading…</p>;
  return (
    <div>
      <h1>User <span class="name">{name}</span></h1>
      <p class="muted" id="user-tags">Tags: {tagText(user.data.tags) || "none"}</p>
      <PermissionsSection user={name} />
      <LimitsSection base={apiPath("user-limits", name)} names={["max-connections", "max-channels"]} />
      <Section title="Update this user">
        <ActionForm
          name="update-user"
          label="Update user"
          action={async (form) => {
            const password = str(form, "password");
            // A PUT without a password clears it: keep the current one by sending its hash back, as RabbitMQ's
            // own UI does.
            const current = user.data;
            const secret = password ? { password } : { password_hash: current?.password_hash ?? "", hashing_algorithm: current?.hashing_algorithm };
            await call(session, "PUT", apiPath("users", name), { tags: str(form, "tags"), ...secret });
            setBump(bump + 1);
            return password ? "Password changed, tags saved." : "Tags saved.";
          }}
        >
          <Field label="Tags"><input name="tags" value={tagText(user.data.tags)} /></Field>
          <Field label="New password (empty: unchanged)"><input name="password" type="password" autocomplete="new-password" /></Field>
        </ActionForm>
      </Section>
      <Section title="Delete this user">
        <ActionForm
          name="delete-user"
          label="Delete"
          action={async () => {
            if (!confirm(`Delete user ${name}?`)) return "Not deleted.";
            await call(session, "DELETE", apiPath("users", name));
            location.hash = link("users");
          }}
        >
          {null}
        </ActionForm>
      </Section>
    </div>
  );
}
