"""BindingTable: binding identity, idempotent add/remove, cascades on deletion, frozen arguments."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any, cast

import pytest

from broker.core.exchanges.bindings import Binding, BindingTable
from broker.core.exchanges.exchange import Exchange, create_exchange
from broker.core.model.arguments import freeze_table, thaw_table
from broker.core.model.message import Message
from protocol.errors import ChannelError


def route(exchange: Exchange, routing_key: str = "k", headers: dict[str, Any] | None = None) -> list[object]:
    return list(exchange.kind.route(Message(exchange.name, routing_key, b"", b"", headers=headers)))


def test_add_binds_and_a_repeated_add_is_a_noop() -> None:
    table = BindingTable()
    x = create_exchange("x", "direct")
    assert table.add(x, "q", "k") is True
    assert table.add(x, "q", "k", {}) is False
    assert len(table) == 1
    assert route(x) == ["q"]


def test_argument_order_does_not_make_a_new_binding() -> None:
    table = BindingTable()
    x = create_exchange("x", "headers")
    assert table.add(x, "q", "", {"a": 1, "b": "2"})
    assert not table.add(x, "q", "", {"b": "2", "a": 1})
    assert table.remove(x, "q", "", {"b": "2", "a": 1})
    assert len(table) == 0


def test_typed_argument_values_make_distinct_bindings() -> None:
    table = BindingTable()
    x = create_exchange("x", "direct")
    for value in (1, True, 1.0, "1", Decimal("1"), Decimal("1.0")):
        assert table.add(x, "q", "k", {"v": value}), value
    assert len(table) == 6
    assert route(x) == ["q"]


def test_remove_unbinds_and_a_missing_binding_is_false() -> None:
    table = BindingTable()
    x = create_exchange("x", "direct")
    table.add(x, "q", "k")
    assert table.remove(x, "q", "other") is False
    assert table.remove(x, "q", "k") is True
    assert table.remove(x, "q", "k") is False
    assert route(x) == []
    assert not table.has_bindings_from(x)


def test_a_rejected_binding_is_not_added() -> None:
    table = BindingTable()
    x = create_exchange("x", "headers")
    with pytest.raises(ChannelError):
        table.add(x, "q", "", {"x-match": "bogus"})
    assert len(table) == 0
    assert table.by_source(x) == []


def test_remove_destination_unbinds_from_every_source() -> None:
    table = BindingTable()
    x1, x2 = create_exchange("x1", "direct"), create_exchange("x2", "topic")
    table.add(x1, "q", "a")
    table.add(x1, "q", "b")
    table.add(x2, "q", "#")
    table.add(x1, "other", "a")
    removed = table.remove_destination("q")
    assert {(b.source.name, b.routing_key) for b in removed} == {("x1", "a"), ("x1", "b"), ("x2", "#")}
    assert route(x1, "a") == ["other"]
    assert route(x2, "anything") == []
    assert table.has_bindings_from(x1)
    assert not table.has_bindings_from(x2)
    assert table.remove_destination("q") == []


def test_remove_source_drops_its_bindings_and_e2e_count() -> None:
    table = BindingTable()
    src, dst = create_exchange("src", "fanout"), create_exchange("dst", "fanout")
    table.add(src, dst, "")
    table.add(src, "q", "")
    assert src.e2e_bindings == 1
    removed = table.remove_source(src)
    assert len(removed) == 2
    assert src.e2e_bindings == 0
    assert not table.has_bindings_to(dst)
    assert len(table) == 0


def test_indexes_and_iteration() -> None:
    table = BindingTable()
    x, y = create_exchange("x", "direct"), create_exchange("y", "fanout")
    table.add(x, "q1", "a")
    table.add(x, y, "b")
    table.add(y, "q1", "")
    assert [b.routing_key for b in table.by_source(x)] == ["a", "b"]
    assert [b.source.name for b in table.by_destination("q1")] == ["x", "y"]
    assert [b.is_e2e for b in table] == [False, True, False]
    assert Binding(x, "q1", "a", ()) in table
    assert table.has_bindings_to(y)
    assert x.e2e_bindings == 1
    assert y.e2e_bindings == 0


def test_binding_args_round_trip() -> None:
    table = BindingTable()
    x = create_exchange("x", "headers")
    arguments = {"x-match": "any", "b": [1, "x"], "a": {"n": None}}
    table.add(x, "q", "", arguments)
    (binding,) = table.by_source(x)
    assert binding.args == arguments
    assert binding.args is not binding.args


NESTED: dict[str, Any] = {
    "str": "s",
    "bytes": b"\xff",
    "binary": bytearray(b"ab"),
    "int": 7,
    "big": 2**62,
    "bool": False,
    "float": 1.25,
    "decimal": Decimal("1.50"),
    "ts": datetime.datetime(2024, 5, 1, tzinfo=datetime.UTC),
    "void": None,
    "table": {"inner": [1, {"deep": b"x"}], "t": True},
    "array": [None, 1.0, "a", [2, 3]],
}


def test_frozen_arguments_are_hashable_and_reversible_for_every_field_type() -> None:
    frozen = freeze_table(NESTED)
    hash(frozen)
    assert thaw_table(frozen) == NESTED
    assert freeze_table(dict(reversed(list(NESTED.items())))) == frozen
    assert isinstance(thaw_table(frozen)["binary"], bytearray)
    assert str(thaw_table(frozen)["decimal"]) == "1.50"


def test_nan_arguments_freeze_equal() -> None:
    assert freeze_table({"f": math.nan}) == freeze_table({"f": float("nan")})
    assert math.isnan(thaw_table(freeze_table({"f": math.nan}))["f"])


def test_bindings_with_nested_arguments_work_end_to_end() -> None:
    table = BindingTable()
    x = create_exchange("x", "headers")
    assert table.add(x, "q", "", {"x-match": "any", **NESTED})
    assert route(x, headers={"table": {"inner": [1, {"deep": b"x"}], "t": True}}) == ["q"]
    assert table.remove(x, "q", "", {"x-match": "any", **NESTED})
    assert route(x, headers={"str": "s"}) == []


def _deep(depth: int, leaf: object) -> dict[str, object]:
    table: dict[str, object] = {"leaf": leaf}
    for _ in range(depth):
        table = {"k": table, "n": [1, "1"]}
    return table


def test_deep_argument_tables_freeze_flat_equal_and_thaw_back() -> None:
    # Past FLAT_DEPTH a value freezes to flat tokens: 10,000 levels freeze, hash, compare and thaw without
    # recursion, equal tables freeze equal, and a shallow table keeps its nested form.
    first, second = freeze_table(_deep(10_000, 5)), freeze_table(_deep(10_000, 5))
    assert first == second
    assert hash(first) == hash(second)
    assert first != freeze_table(_deep(10_000, "5"))  # typed, as the nested form
    assert cast("tuple[str, object]", first[0][1])[0] == "Z"
    thawed = thaw_table(first)
    levels, node = 0, thawed["k"]
    while "k" in node:
        node, levels = node["k"], levels + 1
    assert (levels, node["leaf"]) == (9_999, 5)
    shallow = freeze_table(_deep(3, 5))
    assert cast("tuple[str, object]", shallow[0][1])[0] == "F"
    assert thaw_table(shallow) == _deep(3, 5)
