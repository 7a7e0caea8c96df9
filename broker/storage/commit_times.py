"""How long the store's commits take: a cumulative histogram of group-commit durations, bumped by the
writer thread after each commit and read by Prometheus at scrape time (warrenmq_store_commit_seconds). A
confirm for a persistent message waits for one commit, so this is what a shared PostgreSQL store adds to
confirm latency."""

from __future__ import annotations

# Upper bounds in seconds (Prometheus' default histogram buckets, from 1 ms).
BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class CommitTimes:
    # A plain class, not a dataclass: a dataclass's methods are compiled at every start.
    __slots__ = ("commits", "counts", "seconds")

    def __init__(self) -> None:
        self.counts = [0] * len(BUCKETS_S)  # per bucket, not cumulative
        self.commits = 0
        self.seconds = 0.0

    def record(self, elapsed_s: float) -> None:
        for index, bound in enumerate(BUCKETS_S):
            if elapsed_s <= bound:
                self.counts[index] += 1
                break
        self.commits += 1
        self.seconds += elapsed_s

    def cumulative(self) -> list[tuple[str, int]]:
        """Prometheus' ``le`` buckets: commits at most each bound, then +Inf (every commit)."""
        rows, total = [], 0
        for bound, count in zip(BUCKETS_S, self.counts, strict=True):
            total += count
            rows.append((repr(bound), total))
        rows.append(("+Inf", self.commits))
        return rows
