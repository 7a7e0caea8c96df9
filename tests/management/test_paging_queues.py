"""A page of /api/queues in name order builds only the page's rows, and answers exactly as the full list
sorted, filtered and paged (the general path, which ``columns=`` or a statistics sort still take)."""

from __future__ import annotations

from typing import Any

import pytest

from broker.management.api import paging
from tests.management.conftest import Api

NAMES = ["b", "A", "a10", "a2", "é", "Zed", "a1", "queue-x", "x-queue", "mid"]


async def _declare(api: Api) -> None:
    for vhost in ("/", "v2"):
        if vhost != "/":
            assert (await api.put("/api/vhosts/v2")).status in (201, 204)
            assert (
                await api.put(
                    "/api/permissions/v2/guest", json={"configure": ".*", "write": ".*", "read": ".*"}
                )
            ).status in (201, 204)
        quoted = "%2F" if vhost == "/" else vhost
        for name in NAMES:
            response = await api.put(f"/api/queues/{quoted}/{name}", json={"durable": False})
            assert response.status in (201, 204)


def _reference(
    rows: list[dict[str, Any]], sort: str | None, reverse: bool, name: str
) -> list[tuple[str, str]]:
    keys = [sort, "vhost", "name"] if sort else ["vhost", "name"]
    ordered = sorted(rows, key=lambda row: [row[key].encode() for key in keys])
    if reverse:
        ordered.reverse()
    if name:
        ordered = [row for row in ordered if name.lower() in row["name"].lower()]
    return [(row["vhost"], row["name"]) for row in ordered]


@pytest.mark.parametrize(
    ("query", "sort", "reverse", "name"),
    [
        ("", None, False, ""),
        ("&sort=name", "name", False, ""),
        ("&sort=vhost&sort_reverse=true", "vhost", True, ""),
        ("&sort=name&sort_reverse=true&name=QUEUE", "name", True, "queue"),
        ("&name=a", None, False, "a"),
    ],
)
async def test_a_page_in_name_order_equals_the_full_list_paged(
    api: Api, query: str, sort: str | None, reverse: bool, name: str
) -> None:
    await _declare(api)
    everything = await api.json("/api/queues")
    expected = _reference(everything, sort, reverse, name)
    seen: list[tuple[str, str]] = []
    page = 1
    while True:
        body = await api.json(f"/api/queues?page={page}&page_size=3{query}")
        assert body["total_count"] == len(everything)
        assert body["filtered_count"] == len(expected)
        assert body["page_count"] == (len(expected) + 2) // 3
        seen += [(item["vhost"], item["name"]) for item in body["items"]]
        assert all("messages" in item for item in body["items"])  # full rows, statistics included
        if page >= body["page_count"]:
            break
        page += 1
    assert seen == expected


async def test_the_whole_list_built_and_encoded_in_slices_is_one_sorted_json_array(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    await _declare(api)
    whole = await api.json("/api/queues")
    monkeypatch.setattr(paging, "ROW_SLICE", 3)  # 20 queues: seven slices
    sliced = await api.json("/api/queues")
    assert len(sliced) == 2 * len(NAMES)
    assert [(row["vhost"], row["name"]) for row in sliced] == _reference(whole, None, False, "")
    assert [row["name"] for row in sliced] == [row["name"] for row in whole]
    names_only = await api.json("/api/queues?columns=name&sort=name")
    assert names_only[0] == {"name": "A"}


async def test_a_vhosts_page_holds_only_its_queues(api: Api) -> None:
    await _declare(api)
    body = await api.json("/api/queues/v2?page=2&page_size=4")
    in_binary_order = [name.decode() for name in sorted(name.encode() for name in NAMES)]
    assert [item["name"] for item in body["items"]] == in_binary_order[4:8]
    assert {item["vhost"] for item in body["items"]} == {"v2"}
    assert body["total_count"] == len(NAMES)
