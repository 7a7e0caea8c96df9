"""The comparison machinery itself: normalisation hides only what legitimately differs between two brokers."""

from __future__ import annotations

import pytest

from .scenarios import normalise

pytestmark = pytest.mark.compat


def test_prefix_and_generated_names_are_normalised_consistently() -> None:
    observation = {
        "queues": ["amq.gen-AAAA", "amq.gen-BBBB", "amq.gen-AAAA"],
        "error": [404, "NOT_FOUND - no queue 'cmp123-q' in vhost '/'"],
        "tag": "amq.ctag-ZZZ_z-9",
    }
    assert normalise(observation, "cmp123") == {
        "queues": ["amq.gen-#0", "amq.gen-#1", "amq.gen-#0"],
        "error": [404, "NOT_FOUND - no queue 'P-q' in vhost '/'"],
        "tag": "amq.ctag-#0",
    }


def test_real_differences_survive_normalisation() -> None:
    rabbit = normalise({"routed": ["a", "b"], "code": 406, "names": ["amq.gen-X", "amq.gen-Y"]}, "p1")
    assert normalise({"routed": ["b", "a"], "code": 406, "names": ["amq.gen-X", "amq.gen-Y"]}, "p2") != rabbit
    assert normalise({"routed": ["a", "b"], "code": 405, "names": ["amq.gen-X", "amq.gen-Y"]}, "p2") != rabbit
    # the same generated name used twice is not the same as two different names
    assert normalise({"routed": ["a", "b"], "code": 406, "names": ["amq.gen-X", "amq.gen-X"]}, "p2") != rabbit
