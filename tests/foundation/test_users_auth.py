"""CLI users, hashed tokens, user and admin authentication, ownership (404, never data)."""

from __future__ import annotations

import hashlib
import uuid

import pytest
import requests
from sqlalchemy import select

from mojodex_core.db.models import ApiToken, User, UserTask, UserTaskExecution
from tests.foundation.conftest import clean_env, run_mojodex
from tests.support.live import ADMIN_SECRET


def email() -> str:
    return f"cli{uuid.uuid4().hex[:10]}@example.com"


def get_user_tasks(live, header: str | None) -> requests.Response:
    headers = {} if header is None else {"Authorization": header}
    return requests.get(live.base_url + "/user_task", headers=headers, timeout=30)


# --- mojodex users create / grant


def test_users_create_prints_the_token_once_alone_on_the_last_line_and_it_works_over_http(live, database_url):
    address = email()
    proc = run_mojodex(
        ["users", "create", "--name", "Ada", "--email", address, "--language", "fr"],
        clean_env(DATABASE_URL=database_url),
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.rstrip("\n").splitlines()
    token = lines[-1]
    assert token == token.strip() and " " not in token and len(token) >= 32
    assert proc.stdout.count(token) == 1

    # No task granted yet: authenticated, empty list.
    assert get_user_tasks(live, f"Bearer {token}").json() == {"user_tasks": []}
    granted = run_mojodex(
        ["users", "grant", "--user", address, "--task", "test_email"], clean_env(DATABASE_URL=database_url)
    )
    assert granted.returncode == 0, granted.stderr
    for header in (f"Bearer {token}", token, f"bearer {token}"):
        response = get_user_tasks(live, header)
        assert response.status_code == 200, header
        tasks = response.json()["user_tasks"]
        assert [(t["name_for_system"], t["name"]) for t in tasks] == [("test_email", "E-mail")]

    # Stored as a sha256 hash: the token itself is nowhere in its row.
    with live.db() as db:
        user = db.scalar(select(User).where(User.email == address))
        rows = list(db.scalars(select(ApiToken).where(ApiToken.user_id == user.user_id)))
        assert len(rows) == 1
        row = rows[0]
        assert row.token_hash == hashlib.sha256(token.encode()).hexdigest()
        assert all(token not in str(getattr(row, c.key)) for c in ApiToken.__table__.columns)
        assert user.language_code == "fr"


def test_users_create_with_a_duplicate_email_exits_2(cli):
    address = email()
    assert cli("users", "create", "--name", "A", "--email", address).exit_code == 0
    again = cli("users", "create", "--name", "B", "--email", address.upper())
    assert again.exit_code == 2
    assert "already exists" in again.stderr
    assert again.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--email", "not-an-email"], "email: not a valid address"),
        (["--email", "{email}", "--language", "French"], "language: must be a language code"),
        (["--email", "{email}", "--language", "zz"], "language: unknown language code 'zz'"),
        (["--email", "{email}", "--name", "  "], "name: must not be empty"),
    ],
)
def test_users_create_rejects_bad_input_with_exit_2(cli, args, message):
    args = [a.replace("{email}", email()) for a in args]
    if "--name" not in args:
        args = ["--name", "N", *args]
    result = cli("users", "create", *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_users_grant_errors_exit_2(cli):
    address = email()
    assert cli("users", "create", "--name", "G", "--email", address).exit_code == 0
    unknown_task = cli("users", "grant", "--user", address, "--task", "no_such_task")
    assert unknown_task.exit_code == 2
    assert "no task named no_such_task" in unknown_task.stderr
    unknown_user = cli("users", "grant", "--user", email(), "--all")
    assert unknown_user.exit_code == 2
    assert "no user with email" in unknown_user.stderr
    neither = cli("users", "grant", "--user", address)
    assert neither.exit_code == 2
    both = cli("users", "grant", "--user", address, "--all", "--task", "test_email")
    assert both.exit_code == 2


def test_users_grant_all_enables_every_task_and_is_idempotent(cli, live):
    address = email()
    token = cli("users", "create", "--name", "All", "--email", address).stdout.splitlines()[-1]
    result = cli("users", "grant", "--user", address, "--all")
    assert result.exit_code == 0, result.output
    with live.db() as db:
        from mojodex_core.db.models import Task

        every = set(db.scalars(select(Task.name_for_system)))
    listed = {t["name_for_system"] for t in get_user_tasks(live, token).json()["user_tasks"]}
    assert listed == every
    again = cli("users", "grant", "--user", address, "--all")
    assert again.exit_code == 0
    assert "granted 0 task(s)" in again.stdout


def test_users_demo_keeps_its_token_in_mojodex_var_dir(cli, tmp_path):
    var_dir = tmp_path / "demo_var"
    address = email()
    first = cli("users", "demo", "--email", address, MOJODEX_VAR_DIR=str(var_dir))
    assert first.exit_code == 0, first.output
    token = first.stdout.splitlines()[-1]
    assert (var_dir / "demo_token").read_text().strip() == token
    second = cli("users", "demo", "--email", address, MOJODEX_VAR_DIR=str(var_dir))
    assert second.stdout.splitlines()[-1] == token


# --- authentication


@pytest.mark.parametrize(
    "header",
    [None, "", "Bearer", "Bearer ", "Bearer not-a-token", "not-a-token", ADMIN_SECRET, "Basic dXNlcjpwYXNz"],
)
def test_user_routes_without_a_valid_token_are_401_json(live, header):
    response = get_user_tasks(live, header)
    assert response.status_code == 401
    assert response.json() == {"error": "missing or invalid token"}


def test_a_revoked_token_is_401(live):
    from mojodex_core.db.models import utcnow

    client = live.new_user()
    assert client.call("GET", "/user_task").status_code == 200
    with live.db() as db:
        for row in db.scalars(select(ApiToken).where(ApiToken.user_id == client.user_id)):
            row.revoked_at = utcnow()
    assert client.call("GET", "/user_task").status_code == 401


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("PUT", "/user_task_execution"),
        ("GET", "/user_task_execution"),
        ("DELETE", "/user_task_execution"),
        ("POST", "/user_task_execution_run"),
        ("POST", "/user_task_execution_title"),
        ("PUT", "/user_message"),
        ("GET", "/message"),
        ("GET", "/user_task_execution_produced_text"),
        ("GET", "/produced_text"),
        ("POST", "/produced_text"),
    ],
)
def test_every_user_route_requires_a_token(live, method, path):
    response = requests.request(method, live.base_url + path, json={}, timeout=30)
    assert response.status_code == 401
    assert "error" in response.json()


# --- ownership: another user's pk is a 404 that looks exactly like a missing one


@pytest.fixture
def owner_and_intruder(live):
    """Alice has an execution with a title and a produced text; Bob has his own execution."""
    from mojodex_core.execution.produced_text import append_version

    alice, bob = live.new_user(), live.new_user()
    execution = alice.new_execution()
    pk, session_id = execution["user_task_execution_pk"], execution["session_id"]
    alice.ok(
        "POST", "/user_task_execution_title", json={"user_task_execution_pk": pk, "title": "Alice secret"}
    )
    with live.db() as db:
        row = db.get(UserTaskExecution, pk)
        version = append_version(
            db, row, alice.user_id, title="Alice draft", production="Alice's text", origin="assistant"
        )
        db.flush()
        produced_text_pk = version.produced_text_fk
    own = bob.new_execution()
    return {
        "alice": alice,
        "bob": bob,
        "pk": pk,
        "session_id": session_id,
        "produced_text_pk": produced_text_pk,
        "user_task_pk": alice.user_task_pk(),
        "bob_pk": own["user_task_execution_pk"],
        "bob_session_id": own["session_id"],
    }


MISSING = 2_000_000_000  # a pk no row has


def _requests(d: dict, pk: int, produced_text_pk: int, session_id: str, user_task_pk: int) -> list[tuple]:
    return [
        ("GET", "/user_task_execution", {"params": {"user_task_execution_pk": pk}}),
        ("DELETE", "/user_task_execution", {"params": {"user_task_execution_pk": pk}}),
        ("DELETE", "/user_task_execution", {"json": {"user_task_execution_pk": pk}}),
        (
            "POST",
            "/user_task_execution_run",
            {"json": {"user_task_execution_pk": pk, "inputs": {"email_content": "x", "tone": "formal"}}},
        ),
        (
            "PUT",
            "/user_message",
            {"json": {"session_id": session_id, "user_task_execution_pk": pk, "text": "hi"}},
        ),
        (
            "PUT",
            "/user_message",
            {"json": {"session_id": d["bob_session_id"], "user_task_execution_pk": pk, "text": "hi"}},
        ),
        (
            "PUT",
            "/user_message",
            {"json": {"session_id": session_id, "user_task_execution_pk": d["bob_pk"], "text": "hi"}},
        ),
        ("GET", "/message", {"params": {"session_id": session_id}}),
        ("GET", "/user_task_execution_produced_text", {"params": {"user_task_execution_pk": pk}}),
        ("GET", "/produced_text", {"params": {"produced_text_pk": produced_text_pk}}),
        (
            "POST",
            "/produced_text",
            {"json": {"produced_text_pk": produced_text_pk, "production": "Bob was here"}},
        ),
        ("POST", "/produced_text", {"json": {"user_task_execution_pk": pk, "production": "Bob was here"}}),
        (
            "POST",
            "/user_task_execution_title",
            {"json": {"user_task_execution_pk": pk, "title": "Bob was here"}},
        ),
        ("PUT", "/user_task_execution", {"json": {"user_task_pk": user_task_pk}}),
    ]


def test_another_users_pks_are_404_and_never_leak_or_change_data(live, owner_and_intruder):
    d = owner_and_intruder
    bob, alice = d["bob"], d["alice"]
    theirs = _requests(d, d["pk"], d["produced_text_pk"], d["session_id"], d["user_task_pk"])
    missing = _requests(d, MISSING, MISSING, "no-such-session", MISSING)
    for (method, path, kwargs), (_m, _p, missing_kwargs) in zip(theirs, missing, strict=True):
        response = bob.call(method, path, **kwargs)
        assert response.status_code == 404, (
            f"{method} {path} {kwargs}: {response.status_code} {response.text}"
        )
        for secret in ("Alice", d["session_id"]):
            assert secret not in response.text, f"{method} {path} leaked {secret}"
        # Indistinguishable from a pk that does not exist.
        assert response.json() == bob.call(method, path, **missing_kwargs).json(), f"{method} {path}"

    # Nothing of Alice's changed.
    execution = alice.ok("GET", "/user_task_execution", params={"user_task_execution_pk": d["pk"]})
    assert execution["status"] == "created"
    assert execution["title"] == "Alice secret"
    assert execution["json_inputs_values"] == {}
    text = alice.ok("GET", "/produced_text", params={"produced_text_pk": d["produced_text_pk"]})
    assert text["produced_text_version_count"] == 1
    assert text["produced_text"] == "Alice's text"
    assert alice.ok("GET", "/message", params={"session_id": d["session_id"]})["messages"] == []
    with live.db() as db:
        assert db.scalar(select(UserTask).where(UserTask.user_id == bob.user_id)) is not None
        bob_executions = list(
            db.scalars(select(UserTaskExecution).join(UserTask).where(UserTask.user_id == bob.user_id))
        )
        assert len(bob_executions) == 1  # the PUT with Alice's user_task_pk created nothing

    # Bob's list holds only his own execution.
    listed = bob.ok("GET", "/user_task_execution")["user_task_executions"]
    assert [e["user_task_execution_pk"] for e in listed] == [d["bob_pk"]]


def test_the_owner_reads_what_the_intruder_cannot(owner_and_intruder):
    d = owner_and_intruder
    alice = d["alice"]
    assert (
        alice.ok("GET", "/user_task_execution_produced_text", params={"user_task_execution_pk": d["pk"]})[
            "produced_text_title"
        ]
        == "Alice draft"
    )
    assert alice.call("GET", "/message", params={"session_id": d["session_id"]}).status_code == 200


def test_a_disabled_user_task_cannot_start_an_execution(live):
    client = live.new_user()
    user_task_pk = client.user_task_pk()
    with live.db() as db:
        db.get(UserTask, user_task_pk).enabled = False
    response = client.call("PUT", "/user_task_execution", json={"user_task_pk": user_task_pk})
    assert response.status_code == 403
    assert client.ok("GET", "/user_task")["user_tasks"] == []


def test_users_demo_never_hands_out_another_users_token(cli, tmp_path):
    # Before the fix, the kept token was reused if it was valid for anyone.
    var_dir = tmp_path / "demo_var"
    first = cli("users", "demo", "--email", email(), MOJODEX_VAR_DIR=str(var_dir))
    other = cli("users", "demo", "--email", email(), MOJODEX_VAR_DIR=str(var_dir))
    assert other.exit_code == 0, other.output
    assert other.stdout.splitlines()[-1] != first.stdout.splitlines()[-1]
    bad = cli("users", "demo", "--email", "not-an-email", MOJODEX_VAR_DIR=str(var_dir))
    assert bad.exit_code == 2 and "email" in bad.output
