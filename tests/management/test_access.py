"""broker.core.access.access: RabbitMQ's internal user database and permission semantics, pure."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.core.access.access import AccessControl, AccessError, parse_tags
from broker.core.access.passwords import hash_password

# The hash RabbitMQ 3.10.8 stored for guest/guest (GET /api/users on the oracle node).
RABBITMQ_GUEST_HASH = "JDNk36j3JEmHASjMS4L5BUCJAb0XNwtIbP5NLlvneTLpGDUr"


def test_a_rabbitmq_password_hash_logs_in_unchanged() -> None:
    access = AccessControl()
    access.put_user("guest", password_hash=RABBITMQ_GUEST_HASH, tags=("administrator",))
    assert access.authenticate("guest", "guest") is not None
    assert access.authenticate("guest", "Guest") is None


def test_plain_passwords_are_stored_as_salted_sha256_hashes() -> None:
    access = AccessControl()
    user = access.put_user("u", password="secret", salt=b"\x01\x02\x03\x04")
    assert user.hashing_algorithm == "rabbit_password_hashing_sha256"
    assert user.password_hash == hash_password("secret", salt=b"\x01\x02\x03\x04")
    assert "secret" not in user.password_hash
    assert access.authenticate("u", "secret") is user


def test_an_empty_password_hash_cannot_log_in() -> None:
    access = AccessControl()
    access.put_user("nopass", password_hash="")
    assert access.authenticate("nopass", "") is None


def test_authorize_matches_unanchored_like_re_run() -> None:
    access = AccessControl()
    access.set_permission("u", "/", "^a", "b", ".*")
    assert access.authorize("u", "/", "queue", "abc", "configure")
    assert not access.authorize("u", "/", "queue", "xa", "configure")
    assert access.authorize("u", "/", "exchange", "xbx", "write")
    assert not access.authorize("u", "other", "queue", "abc", "read")  # no permissions in that vhost


def test_an_empty_regex_is_caret_dollar_so_it_refuses_every_named_resource() -> None:
    access = AccessControl()
    access.set_permission("u", "/", "", "", "")
    assert not access.authorize("u", "/", "queue", "q", "read")
    assert not access.authorize("u", "/", "exchange", "", "write")  # the default exchange is "amq.default"


def test_the_default_exchange_is_checked_as_amq_default() -> None:
    access = AccessControl()
    access.set_permission("u", "/", "", "^amq\\.default$", "")
    assert access.authorize("u", "/", "exchange", "", "write")
    assert access.refused_text("u", "/", "exchange", "", "read") == (
        # RabbitMQ 3.10.8's wording (the oracle): no permission word before "access".
        "ACCESS_REFUSED - access to exchange 'amq.default' in vhost '/' refused for user 'u'"
    )


def test_an_invalid_regex_is_refused_and_changes_nothing() -> None:
    access = AccessControl()
    access.set_permission("u", "/", ".*", ".*", ".*")
    version = access.version
    with pytest.raises(AccessError):
        access.set_permission("u", "/", "(", ".*", ".*")
    assert access.permissions[("u", "/")].configure == ".*"
    assert access.version == version


def test_topic_permissions_apply_only_to_their_exchange_and_expand_variables() -> None:
    access = AccessControl()
    assert access.authorize_topic("u", "/", "amq.topic", "anything", "write")
    access.set_topic_permission("u", "/", "amq.topic", "^{username}\\.", "^x")
    assert access.authorize_topic("u", "/", "amq.topic", "u.news", "write")
    assert not access.authorize_topic("u", "/", "amq.topic", "v.news", "write")
    assert not access.authorize_topic("u", "/", "amq.topic", "u.news", "read")
    assert access.authorize_topic("u", "/", "other", "v.news", "write")


def test_deleting_a_user_or_a_vhost_drops_their_permissions() -> None:
    access = AccessControl()
    access.put_user("u", password="p")
    access.set_permission("u", "/", ".*", ".*", ".*")
    access.set_permission("u", "v", ".*", ".*", ".*")
    access.set_topic_permission("u", "v", "amq.topic", ".*", ".*")
    access.vhost_deleted("v")
    assert list(access.permissions) == [("u", "/")]
    assert not access.topic_permissions
    assert access.delete_user("u")
    assert not access.permissions
    assert not access.delete_user("u")


def test_every_change_moves_the_version_for_per_channel_caches() -> None:
    access = AccessControl()
    seen = [access.version]
    access.put_user("u", password="p")
    seen.append(access.version)
    access.set_permission("u", "/", ".*", ".*", ".*")
    seen.append(access.version)
    access.clear_permission("u", "/")
    seen.append(access.version)
    assert seen == sorted(set(seen))


def test_users_without_permissions() -> None:
    access = AccessControl()
    access.put_user("a", password="p")
    access.put_user("b", password="p")
    access.set_permission("a", "/", ".*", ".*", ".*")
    assert [user.name for user in access.users_without_permissions()] == ["b"]


def test_tags_parse_from_a_comma_string_or_a_list() -> None:
    assert parse_tags("administrator, monitoring,") == ("administrator", "monitoring")
    assert parse_tags(["management"]) == ("management",)
    assert parse_tags("") == ()


@given(
    pattern=st.sampled_from(["^a", "b$", "a.c", "^(x|y)+$", ".*", "^amq\\.", "[0-9]"]),
    name=st.text(alphabet="abcxy0.9", max_size=8),
    permission=st.sampled_from(["configure", "write", "read"]),
)
def test_authorize_agrees_with_an_unanchored_search(pattern: str, name: str, permission: str) -> None:
    access = AccessControl()
    access.set_permission("u", "/", pattern, pattern, pattern)
    expected = re.search(pattern, name) is not None
    assert access.authorize("u", "/", "queue", name, permission) is expected  # type: ignore[arg-type]


def test_a_decision_cache_answers_as_authorize_and_forgets_on_any_change() -> None:
    from broker.core.access.access import DecisionCache

    access = AccessControl()
    access.set_permission("u", "/", ".*", "^a", ".*")
    cache = DecisionCache(access, "u", "/")
    assert cache.allowed("exchange", "ax", "write")
    assert not cache.allowed("exchange", "bx", "write")
    access.set_permission("u", "/", ".*", "^b", ".*")
    assert not cache.allowed("exchange", "ax", "write")
    assert cache.allowed("exchange", "bx", "write")
    access.clear_permission("u", "/")
    assert not cache.allowed("exchange", "bx", "write")


def test_planes_off_grants_every_permission_and_on_enforces_them_again() -> None:
    """`--planes off` (the baseline of `warrenmq bench --plane-cost`) lifts every check, topic ones too."""
    access = AccessControl()
    access.set_permission("u", "/", "", "", "")
    access.set_topic_permission("u", "/", "t", "^never$", "^never$")
    access.enforced = False
    assert access.authorize("u", "/", "queue", "q", "read")
    assert access.authorize("nobody", "/", "exchange", "x", "write")
    assert access.authorize_topic("u", "/", "t", "a.b", "write")
    access.enforced = True
    assert not access.authorize("u", "/", "queue", "q", "read")
    assert not access.authorize_topic("u", "/", "t", "a.b", "write")
