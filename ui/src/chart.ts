// Time series from the management API's samples (newest first, as RabbitMQ's ?msg_rates_age=&msg_rates_incr=
// answers them), and the geometry of a small SVG line chart drawn without a chart library.
export interface Sample {
  sample: number;
  timestamp: number;
}
export type Point = [number, number]; // [timestamp ms, value]

/** The window the UI asks for, as RabbitMQ's UI does for its "last minute" charts. */
export const WINDOW = "lengths_age=60&lengths_incr=5&msg_rates_age=60&msg_rates_incr=5";

/** A gauge's samples (queue lengths) as points, oldest first. */
export function levels(samples: Sample[] | undefined): Point[] {
  return (samples ?? []).map((s): Point => [s.timestamp, s.sample]).reverse();
}

/** A counter's samples (published, delivered…) as per-second rates between neighbours, oldest first. */
export function rates(samples: Sample[] | undefined): Point[] {
  const points: Point[] = [];
  const list = samples ?? [];
  for (let i = list.length - 2; i >= 0; i--) {
    const newer = list[i];
    const older = list[i + 1];
    const seconds = (newer.timestamp - older.timestamp) / 1000;
    if (seconds > 0) points.push([newer.timestamp, Math.max(0, (newer.sample - older.sample) / seconds)]);
  }
  return points;
}

export interface Scale {
  t0: number;
  t1: number;
  max: number;
}

/** One scale for every series of a chart: the time span they cover and a rounded-up maximum (at least 1). */
export function scale(series: Point[][]): Scale {
  const all = series.flat();
  if (all.length === 0) return { t0: 0, t1: 1, max: 1 };
  const times = all.map((p) => p[0]);
  const top = Math.max(...all.map((p) => p[1]));
  return { t0: Math.min(...times), t1: Math.max(...times), max: niceCeil(top) };
}

export function niceCeil(value: number): number {
  if (value <= 1) return 1;
  const magnitude = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= value) return step * magnitude;
  return 10 * magnitude;
}

/** An SVG polyline's points for ``points`` in a ``width``×``height`` box. */
export function polyline(points: Point[], s: Scale, width: number, height: number): string {
  const span = s.t1 - s.t0 || 1;
  return points
    .map(([t, v]) => `${(((t - s.t0) / span) * width).toFixed(1)},${(height - (v / s.max) * height).toFixed(1)}`)
    .join(" ");
}
