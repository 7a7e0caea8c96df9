import { describe, expect, it } from "vitest";
import { levels, niceCeil, polyline, rates, scale } from "./chart";

// As the API answers ?msg_rates_age=60&msg_rates_incr=5: newest first.
const counter = [
  { sample: 30, timestamp: 15000 },
  { sample: 20, timestamp: 10000 },
  { sample: 0, timestamp: 5000 },
];

describe("charts", () => {
  it("turns counter samples into per-second rates, oldest first", () => {
    expect(rates(counter)).toEqual([[10000, 4], [15000, 2]]);
    expect(rates([{ sample: 5, timestamp: 1 }])).toEqual([]);
    expect(rates(undefined)).toEqual([]);
    // A counter that went down (an object recreated) never draws a negative rate.
    expect(rates([{ sample: 0, timestamp: 2000 }, { sample: 9, timestamp: 1000 }])).toEqual([[2000, 0]]);
  });

  it("keeps gauge samples as they are, oldest first", () => {
    expect(levels(counter)).toEqual([[5000, 0], [10000, 20], [15000, 30]]);
  });

  it("scales every series to one rounded maximum", () => {
    expect(niceCeil(0)).toBe(1);
    expect(niceCeil(3.2)).toBe(5);
    expect(niceCeil(30)).toBe(50);
    expect(niceCeil(100)).toBe(100);
    expect(scale([levels(counter), rates(counter)])).toEqual({ t0: 5000, t1: 15000, max: 50 });
    expect(scale([])).toEqual({ t0: 0, t1: 1, max: 1 });
  });

  it("places points in the box, zero at the bottom", () => {
    const s = { t0: 0, t1: 10, max: 4 };
    expect(polyline([[0, 0], [5, 2], [10, 4]], s, 100, 40)).toBe("0.0,40.0 50.0,20.0 100.0,0.0");
  });
});
