import { levels, polyline, rates, scale, type Point, type Sample } from "./chart";
import { fmt } from "./widgets";

const COLOURS = ["#ff6600", "#5470c6", "#1b7a2b", "#b00020", "#7b3fe4", "#888"];
const W = 360;
const H = 110;

export interface Line {
  label: string;
  points: Point[];
  now?: number;
}

/** A line chart of the last minute's samples; the legend shows each series' current value. */
export function Chart({ title, lines, unit = "" }: { title: string; lines: Line[]; unit?: string }) {
  const s = scale(lines.map((l) => l.points));
  return (
    <figure class="chart" data-title={title}>
      <figcaption>{title}</figcaption>
      <svg width={W + 44} height={H + 8} viewBox={`-40 -4 ${W + 44} ${H + 8}`} role="img" aria-label={title}>
        <line class="axis" x1={0} y1={H} x2={W} y2={H} />
        <line class="axis" x1={0} y1={0} x2={0} y2={H} />
        <text class="tick" x={-4} y={8} text-anchor="end">{fmt(s.max)}</text>
        <text class="tick" x={-4} y={H} text-anchor="end">0</text>
        {lines.map((line, i) =>
          line.points.length > 1 ? (
            // data-values: the values drawn, oldest first, so a test can hold the line to its legend.
            <polyline class="series" data-label={line.label} data-values={line.points.map((p) => p[1]).join(" ")} points={polyline(line.points, s, W, H)} stroke={COLOURS[i % COLOURS.length]} />
          ) : null,
        )}
      </svg>
      <ul class="legend">
        {lines.map((line, i) => {
          const last = line.now ?? line.points[line.points.length - 1]?.[1];
          return (
            <li>
              <i style={{ background: COLOURS[i % COLOURS.length] }} /> {line.label}{" "}
              <b>{last === undefined ? "-" : `${last >= 10 || Number.isInteger(last) ? fmt(Math.round(last)) : last.toFixed(1)}${unit}`}</b>
            </li>
          );
        })}
      </ul>
    </figure>
  );
}

type Details = { rate?: number; samples?: Sample[] } | undefined;
const details = (row: Record<string, unknown> | undefined, key: string) => row?.[`${key}_details`] as Details;

/** Queued messages (ready, unacked, total) from a row with ``messages*_details`` samples. */
export function LengthsChart({ row }: { row?: Record<string, unknown> }) {
  const level = (key: string, label: string) => ({ label, points: levels(details(row, key)?.samples), now: row?.[key] as number | undefined });
  return <Chart title="Queued messages" lines={[level("messages_ready", "Ready"), level("messages_unacknowledged", "Unacked"), level("messages", "Total")]} />;
}

/** Message rates from ``message_stats``' ``<key>_details`` samples; ``keys`` are [key, label] pairs. */
export function RatesChart({ stats, keys }: { stats?: Record<string, unknown>; keys: [string, string][] }) {
  return <Chart title="Message rates" unit="/s" lines={keys.map(([key, label]) => ({ label, points: rates(details(stats, key)?.samples), now: details(stats, key)?.rate }))} />;
}

export const QUEUE_RATES: [string, string][] = [["publish", "Publish"], ["deliver_get", "Deliver / get"], ["ack", "Ack"], ["redeliver", "Redelivered"]];

/** The overview's and a queue page's two charts, as RabbitMQ's: queued messages and message rates. */
export function TotalsCharts({ stats, lengths }: { stats?: Record<string, unknown>; lengths?: Record<string, unknown> }) {
  return (
    <div class="charts">
      <LengthsChart row={lengths} />
      <RatesChart stats={stats} keys={QUEUE_RATES} />
    </div>
  );
}
