"""The report: PNG charts (matplotlib, Agg) and one self-contained HTML page (images inlined as base64) from
the outputs of the ttd, throughput, fanout and replay jobs. Reads the small result files with pandas: no
Spark. Sections whose job output is missing are skipped and listed."""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # before pyplot: no display on servers and in CI
import matplotlib.pyplot as plt
import pandas as pd

from broker.analytics.errors import AnalyticsError

TOP_KEYS = 8


def _load(results: Path, job: str) -> tuple[pd.DataFrame, dict[str, Any]] | None:
    folder = results / job
    if not (folder / "summary.json").is_file():
        return None
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    data = pd.read_parquet(folder / "data") if (folder / "data").is_dir() else pd.DataFrame()
    return data, summary


def _ttd_chart(data: pd.DataFrame, summary: dict[str, Any], png: Path) -> None:
    keys = summary["by"]
    data = data.copy()
    data["key"] = data[keys].astype(str).agg(" / ".join, axis=1)
    busiest = data.groupby("key")["n"].sum().nlargest(TOP_KEYS).index
    fig, ax = plt.subplots(figsize=(10, 5))
    for key in busiest:
        part = data[data["key"] == key].sort_values("window_start")
        line = ax.plot(part["window_start"], part["p50_ms"], label=f"{key} p50")[0]
        ax.plot(
            part["window_start"], part["p99_ms"], linestyle="--", color=line.get_color(), label=f"{key} p99"
        )
    ax.set_title(f"Time to delivery per {summary['window']} window (by {', '.join(keys)})")
    ax.set_ylabel("ms")
    # Linear from zero: p50 and p99 of one broker sit within an order of magnitude, and a log axis over
    # sub-millisecond values labels its ticks in powers of ten that nobody reads at a glance.
    ax.set_ylim(bottom=0)
    ax.legend(fontsize="small")
    fig.autofmt_xdate()
    fig.savefig(png, dpi=96, bbox_inches="tight")
    plt.close(fig)


def _throughput_chart(data: pd.DataFrame, summary: dict[str, Any], png: Path) -> None:
    totals = data.groupby(["window_start", "metric"])["rate_per_s"].sum().unstack("metric").sort_index()
    fig, ax = plt.subplots(figsize=(10, 5))
    for metric in totals.columns:
        ax.plot(totals.index, totals[metric], marker=".", label=metric)
    ax.set_title(f"Throughput per {summary['window']} window")
    ax.set_ylabel("messages/s")
    ax.legend(fontsize="small")
    fig.autofmt_xdate()
    fig.savefig(png, dpi=96, bbox_inches="tight")
    plt.close(fig)


def _fanout_chart(data: pd.DataFrame, summary: dict[str, Any], png: Path) -> None:
    table = data.pivot_table(
        index="fanout", columns="exchange", values="messages", aggfunc="sum", fill_value=0
    )
    fig, ax = plt.subplots(figsize=(10, 5))
    table.plot.bar(ax=ax, stacked=True)
    ax.set_title(
        f"Queues reached per message ({summary['messages']} messages, {summary['unroutable']} unroutable)"
    )
    ax.set_xlabel("queues reached")
    ax.set_ylabel("messages")
    fig.savefig(png, dpi=96, bbox_inches="tight")
    plt.close(fig)


def _img(png: Path) -> str:
    data = base64.b64encode(png.read_bytes()).decode()
    return f'<img alt="{html.escape(png.stem)}" src="data:image/png;base64,{data}">'


def _facts(summary: dict[str, Any]) -> str:
    rows = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(json.dumps(v, default=str))}</td></tr>"
        for k, v in summary.items()
        if k not in ("keys", "job")
    )
    return f"<table>{rows}</table>"


def render(results_dir: str, out_dir: str) -> dict[str, Any]:
    results, out = Path(results_dir), Path(out_dir)
    if not results.is_dir():
        raise AnalyticsError(f"results directory does not exist: {results_dir}")
    out.mkdir(parents=True, exist_ok=True)
    sections: list[str] = []
    charts: list[str] = []
    missing: list[str] = []
    for job, chart in (("ttd", _ttd_chart), ("throughput", _throughput_chart), ("fanout", _fanout_chart)):
        loaded = _load(results, job)
        if loaded is None:
            missing.append(job)
            continue
        data, summary = loaded
        body = _facts(summary)
        if not data.empty:
            png = out / f"{job}.png"
            chart(data, summary, png)
            charts.append(png.name)
            body = _img(png) + body
        sections.append(f"<h2>{job}</h2>{body}")
    replay = _load(results, "replay")
    if replay is None:
        missing.append("replay")
    else:
        data, summary = replay
        table = (
            data.head(50).to_html(index=False, escape=True) if not data.empty else "<p>No differences.</p>"
        )
        sections.append(f"<h2>replay</h2>{_facts(summary)}<h3>First differing messages</h3>{table}")
    if not sections:
        raise AnalyticsError(f"no job outputs (ttd/, throughput/, fanout/, replay/) under {results_dir}")
    page = (
        "<!doctype html><html><head><meta charset='utf-8'><title>WarrenMQ journal report</title><style>"
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;font-size:90%}img{max-width:100%}"
        "</style></head><body><h1>WarrenMQ journal report</h1>" + "".join(sections) + "</body></html>"
    )
    (out / "report.html").write_text(page, encoding="utf-8")
    return {"job": "report", "html": str(out / "report.html"), "charts": charts, "missing": missing}
