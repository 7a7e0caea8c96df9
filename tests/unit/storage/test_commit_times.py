"""The store's commit-latency histogram (broker.storage.commit_times) as Prometheus reads it."""

from __future__ import annotations

from broker.storage.commit_times import BUCKETS_S, CommitTimes


def test_commits_fall_in_the_first_bucket_that_holds_them_and_buckets_are_cumulative() -> None:
    times = CommitTimes()
    for elapsed_s in (0.0005, 0.001, 0.003, 0.2, 20.0):
        times.record(elapsed_s)
    buckets = dict(times.cumulative())
    assert buckets["0.001"] == 2  # le is inclusive
    assert buckets["0.005"] == 3
    assert buckets["0.25"] == 4
    assert buckets["10.0"] == 4  # 20 s is past every bound
    assert buckets["+Inf"] == 5
    assert len(buckets) == len(BUCKETS_S) + 1
    assert abs(times.seconds - 20.2045) < 1e-9
