"""How the event exchange prints Erlang terms where RabbitMQ's headers carry them (the compat scenario covers
the common cases against RabbitMQ 3.10; these are the ones it does not reach)."""

from __future__ import annotations

from broker.session.event_exchange import format_arguments, vhost_state
from broker.session.lifecycle_events import erlang_ip


def test_addresses_print_as_erlang_inet_tuples() -> None:
    assert erlang_ip("127.0.0.1") == "{127,0,0,1}"
    assert erlang_ip("::1") == "{0,0,0,0,0,0,0,1}"
    assert erlang_ip("fe80::2:ff") == "{65152,0,0,0,0,0,2,255}"


def test_vhost_metadata_prints_as_an_erlang_map_with_quoted_atoms_and_the_queue_type() -> None:
    fields = {"description": "", "tags": ["prod", "Team A"], "default_queue_type": "quorum"}
    state = vhost_state(fields, "rabbit@h")
    assert state == {
        "metadata": "#{default_queue_type => <<\"quorum\">>,description => <<>>,tags => [prod,'Team A']}",
        "default_queue_type": "quorum",
        "cluster_state": {"rabbit@h": "running"},
    }
    assert vhost_state({"description": "d", "tags": []}, "n")["default_queue_type"] == "undefined"


def test_empty_strings_print_as_the_empty_binary() -> None:
    assert format_arguments({"x-empty": "", "k": "v"}) == [
        '{<<"x-empty">>,longstr,<<>>}',
        '{<<"k">>,longstr,<<"v">>}',
    ]
