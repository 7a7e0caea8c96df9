import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";

export interface Column<T> {
  title: string;
  cell: (row: T) => ComponentChildren;
}

export function Table<T>({ rows, columns, empty = "Nothing to show." }: { rows: T[]; columns: Column<T>[]; empty?: string }) {
  if (rows.length === 0) return <p class="muted">{empty}</p>;
  return (
    <table>
      <thead>
        <tr>{columns.map((c) => <th>{c.title}</th>)}</tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr>{columns.map((c) => <td>{c.cell(row)}</td>)}</tr>
        ))}
      </tbody>
    </table>
  );
}

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

/** A form whose submit runs ``action``; its error (or success note) is shown under it. */
export function ActionForm({ label, action, children, name }: { label: string; action: (data: FormData) => Promise<string | void>; children: ComponentChildren; name: string }) {
  const [note, setNote] = useState<{ ok: boolean; text: string } | null>(null);
  return (
    <form
      class="action"
      name={name}
      onSubmit={(event) => {
        event.preventDefault();
        const form = event.currentTarget;
        setNote(null); // a note left from the last submit must not pass for this one's
        action(new FormData(form)).then(
          (text) => setNote({ ok: true, text: text ?? "Done." }),
          (error: Error) => setNote({ ok: false, text: error.message }),
        );
      }}
    >
      {children}
      <button type="submit">{label}</button>
      {note && <p class={note.ok ? "ok" : "error"}>{note.text}</p>}
    </form>
  );
}

export function Field({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    <label class="field">
      <span>{label}</span>
      {children}
    </label>
  );
}

export function jsonObject(text: string): Record<string, unknown> {
  if (text.trim() === "") return {};
  const value: unknown = JSON.parse(text);
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw new Error("Arguments must be a JSON object");
  return value as Record<string, unknown>;
}

export const str = (data: FormData, key: string) => String(data.get(key) ?? "");
export const fmt = (n: unknown) => (typeof n === "number" ? n.toLocaleString() : "-");
