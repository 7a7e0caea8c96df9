"""The active node's lease on its own clock (broker.ha.lease.LeaseTimer)."""

from __future__ import annotations

from broker.ha.lease import LeaseTimer


def test_a_lease_never_granted_is_expired_and_due_for_renewal() -> None:
    timer = LeaseTimer(3.0)
    assert timer.expired(0.0)
    assert timer.renew_at() == float("-inf")
    assert timer.remaining_s(5.0) == 0.0


def test_the_lease_counts_from_when_the_granting_statement_was_sent() -> None:
    timer = LeaseTimer(3.0)
    timer.granted(sent_at=10.0)
    assert not timer.expired(12.999)
    assert timer.expired(13.0)
    assert timer.remaining_s(11.5) == 1.5


def test_renewal_is_due_a_third_of_the_lease_after_the_last_grant() -> None:
    timer = LeaseTimer(3.0)
    timer.granted(sent_at=10.0)
    assert timer.renew_at() == 11.0
    timer.granted(sent_at=11.2)
    assert timer.renew_at() == 11.2 + 1.0
    assert timer.expires_at() == 11.2 + 3.0
