"""`mojodex users issue-token`: a new API token for an existing user, with an optional lifetime, and
rotation (`--revoke OLD` revokes the old token in the same transaction)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select

from mojodex_core.db.models import ApiToken
from mojodex_core.users import hash_token, user_for_token


def _status(client, token: str) -> int:  # noqa: ANN001
    return client.call("GET", "/user_task", headers={"Authorization": f"Bearer {token}"}).status_code


def _email(live, token: str) -> str:  # noqa: ANN001
    with live.db() as db:
        return user_for_token(db, token).email


def test_issue_token_gives_a_working_token_that_lives_until_revoked(live, cli):
    client = live.new_user()
    email = _email(live, client.token)
    result = cli("users", "issue-token", "--user", email, "--label", "ci bot")
    assert result.exit_code == 0, result.output
    token = result.output.strip().splitlines()[-1]
    assert "lives until revoked" in result.output and "ci bot" in result.output
    assert _status(client, token) == 200 and _status(client, client.token) == 200  # the old one is kept
    with live.db() as db:
        row = db.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(token)))
        assert row.label == "ci bot" and row.expires_at is None


def test_issue_token_with_days_expires(live, cli):
    client = live.new_user()
    result = cli("users", "issue-token", "--user", _email(live, client.token), "--days", "7")
    assert result.exit_code == 0, result.output
    token = result.output.strip().splitlines()[-1]
    with live.db() as db:
        expires = db.scalar(select(ApiToken.expires_at).where(ApiToken.token_hash == hash_token(token)))
    expires = expires if expires.tzinfo else expires.replace(tzinfo=UTC)
    assert timedelta(days=7) - timedelta(minutes=5) < expires - datetime.now(UTC) <= timedelta(days=7)
    assert _status(client, token) == 200


def test_rotation_revokes_the_old_token_and_issues_a_new_one(live, cli):
    client = live.new_user()
    result = cli("users", "issue-token", "--user", _email(live, client.token), "--revoke", client.token)
    assert result.exit_code == 0, result.output
    assert "revoked 1 old token(s)" in result.output
    token = result.output.strip().splitlines()[-1]
    assert _status(client, token) == 200
    assert _status(client, client.token) == 401


def test_rotation_refuses_another_users_token_and_stores_nothing(live, cli):
    alice, bob = live.new_user(), live.new_user()
    email = _email(live, alice.token)
    with live.db() as db:
        before = db.scalar(select(ApiToken.api_token_pk).order_by(ApiToken.api_token_pk.desc()).limit(1))
    result = cli("users", "issue-token", "--user", email, "--revoke", bob.token)
    assert result.exit_code == 2 and "no live token of this user" in result.output, result.output
    assert _status(bob, bob.token) == 200  # bob's token is not revoked
    with live.db() as db:  # and no token was issued
        assert db.scalar(select(ApiToken.api_token_pk).order_by(ApiToken.api_token_pk.desc()).limit(1)) == before


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--user", "nobody@example.com"], "no user with email"),
        (["--user", "x@example.com", "--days", "0"], "0 is not in the range 1<=x<=3650"),
        (["--user", "x@example.com", "--label", "  "], "--label must be 1 to 255 characters"),
        (["--user", "x@example.com", "--label", "x" * 256], "--label must be 1 to 255 characters"),
        (["--user", "x@example.com", "--label", "login"], "reserved for sign-in tokens"),
        (["--user", "x@example.com", "--days", "100000000"], "100000000 is not in the range 1<=x<=3650"),
        ([], "Missing option '--user'"),
    ],
)
def test_issue_token_refuses_bad_arguments_with_exit_2(live, cli, args, expected):
    result = cli("users", "issue-token", *args)
    assert result.exit_code == 2
    assert expected in result.output
