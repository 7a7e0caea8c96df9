import { useState } from "preact/hooks";
import { call, isAdmin } from "./api";
import { clock, describeStep, hopText, outcome, type History } from "./history";
import { useCtx, useGet } from "./hooks";
import { apiPath, link } from "./routes";
import { Section } from "./widgets";

const FIELDS: [string, string][] = [
  ["message_id", "Message id"],
  ["correlation_id", "Correlation id"],
  ["routing_key", "Routing key"],
];

/** #/messages?message_id=m-1: the recent messages of the vhost and each one's path, from the broker's
 *  message history (recorded while switched on, like RabbitMQ's firehose). */
export function MessagesPage({ initialQuery }: { initialQuery: string }) {
  const { session, vhost } = useCtx();
  const initial = new URLSearchParams(initialQuery);
  const [field, setField] = useState(FIELDS.find(([key]) => initial.has(key))?.[0] ?? "message_id");
  const [value, setValue] = useState(initial.get(field) ?? "");
  const [bump, setBump] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const query = value ? `?${new URLSearchParams({ [field]: value }).toString()}` : "";
  const history = useGet<History>(`${apiPath("warrenmq", "message-history", vhost)}${query}`, bump);
  const h = history.data;
  const toggle = (enabled: boolean) =>
    call(session, "PUT", apiPath("warrenmq", "message-history", vhost), { enabled }).then(
      () => { setError(null); setBump(bump + 1); },
      (e: Error) => setError(e.message),
    );
  return (
    <div>
      <h1>Message history</h1>
      <p class="muted">
        The path of each recent message of virtual host {vhost}: published, the exchanges it went through, the
        queues, the consumer, and how it was settled. {h && `Recording ${h.enabled ? "on" : "off"} (last ${h.capacity} messages).`}{" "}
        {h && isAdmin(session.tags) && (
          <button name="history-switch" onClick={() => void toggle(!h.enabled)}>{h.enabled ? "Stop recording" : "Start recording"}</button>
        )}
      </p>
      {(error ?? history.error) && <p class="error">{error ?? history.error}</p>}
      <form class="filters" name="history-search" onSubmit={(e) => e.preventDefault()}>
        <select name="field" value={field} onChange={(e) => setField(e.currentTarget.value)}>
          {FIELDS.map(([key, title]) => <option value={key}>{title}</option>)}
        </select>
        <input name="value" placeholder="exact value; empty lists all" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      </form>
      {h && h.messages.length === 0 && <p class="muted">{h.enabled ? "No message recorded matches." : "Recording is off for this virtual host."}</p>}
      {h?.messages.map((m) => (
        <Section title={`Message ${m.properties.message_id ?? `#${m.id}`}`}>
          <div class="history" data-id={m.properties.message_id ?? ""}>
            <p>
              exchange <a href={link("exchanges", vhost, m.exchange || "amq.default")}>{m.exchange || "(AMQP default)"}</a> · routing key <b>{m.routing_key}</b>
              {m.properties.correlation_id && <> · correlation id {m.properties.correlation_id}</>} · {m.body_size} bytes · <b class="outcome">{outcome(m)}</b>
            </p>
            <ol class="steps">
              {m.steps.map((step) => (
                <li class={`step ${step.step}`}>
                  <time>{clock(step.at)}</time> {describeStep(step, m)}
                  {step.hops && step.hops.length > 0 && (
                    <ul class="hops">
                      {step.hops.map((hop) => <li>{hopText(hop)}</li>)}
                    </ul>
                  )}
                </li>
              ))}
              {m.steps_dropped > 0 && <li class="muted">… {m.steps_dropped} more steps not kept</li>}
            </ol>
          </div>
        </Section>
      ))}
    </div>
  );
}
