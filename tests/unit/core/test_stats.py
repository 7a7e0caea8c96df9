"""broker.core.model.stats: rates from the last two samples, and the samples windows, on given timestamps."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from broker.core.model.stats import MAX_SAMPLES, ChannelStats, Series


@given(
    before=st.integers(min_value=0, max_value=10**9),
    added=st.integers(min_value=0, max_value=10**6),
    span_ms=st.integers(min_value=1, max_value=10**7),
)
def test_rate_is_the_change_over_the_last_two_samples(before: int, added: int, span_ms: int) -> None:
    series = Series(("publish",))
    series.record(0, (0,))
    series.record(1000, (before,))
    series.record(1000 + span_ms, (before + added,))
    assert series.rates()["publish"] == added / (span_ms / 1000)


def test_a_single_sample_has_rate_zero_and_a_repeated_instant_replaces_the_sample() -> None:
    series = Series(("ack",))
    series.record(5000, (3,))
    assert series.rates() == {"ack": 0.0}
    series.record(5000, (7,))
    assert list(series.samples) == [(5000, (7,))]


def test_unchanged_samples_share_their_values_and_retention_keeps_the_newest() -> None:
    series = Series(("messages",))
    for second in range(0, 5 * (MAX_SAMPLES + 10), 5):
        series.record(second * 1000, (1, 2)[second // 300 % 2 :][:1])
    assert len(series.samples) == MAX_SAMPLES
    assert series.samples[-1][0] == 5 * (MAX_SAMPLES + 9) * 1000
    distinct = {id(values) for _, values in series.samples}
    assert len(distinct) <= 1 + (5 * MAX_SAMPLES) // 300  # one tuple per change, not one per sample
    assert series.rates() == {"messages": 0.0}


def test_history_is_newest_first_one_per_increment_within_the_age() -> None:
    series = Series(("messages",))
    for second in range(0, 30, 5):
        series.record(second * 1000, (second,))
    assert series.history("messages", 25_000, age_s=10, incr_s=5) == [
        {"sample": 25, "timestamp": 25_000},
        {"sample": 20, "timestamp": 20_000},
        {"sample": 15, "timestamp": 15_000},
    ]


def test_closed_channel_counts_fold_into_totals() -> None:
    totals, channel = ChannelStats(), ChannelStats()
    channel.publish, channel.ack = 4, 2
    totals.add(channel)
    totals.add(channel)
    assert (totals.publish, totals.ack, totals.deliver) == (8, 4, 0)
