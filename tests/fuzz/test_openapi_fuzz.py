"""Schemathesis against a live server, from the server's own /openapi.json.

Every operation gets valid and invalid requests (hypothesis-generated from the spec) with real
credentials: a user's token, or the admin secret on admin routes, so requests get past 401/403.
A run must find no 5xx and no answer that breaks the spec (status code, content type, headers,
body schema). The server has its own database (a fresh SQLite file, or its own Postgres schema
when TEST_DATABASE_URL is set), seeded with the shipped tasks, a user and a few rows so small
generated pks name real rows. Bounded: MOJODEX_FUZZ_EXAMPLES examples per operation and mode
(default 25; half for task specs and menus).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import quote

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy import create_engine, text

from mojodex_core.db.migrate import upgrade
from tests.support.live import ADMIN_SECRET, REPO_ROOT, LiveServer, live_settings, serving

EXAMPLES = int(os.environ.get("MOJODEX_FUZZ_EXAMPLES", "25"))
# Task specs and menus are large nested bodies, slow to generate: half as many examples.
LARGE_BODIES = {"PUT /task", "POST /task", "PUT /menu"}
FUZZ_SCHEMA = "mojodex_fuzz"
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


@dataclass
class FuzzTarget:
    live: LiveServer
    token: str
    spec: dict
    sent: Counter = field(default_factory=Counter)
    statuses: Counter = field(default_factory=Counter)
    seconds: Counter = field(default_factory=Counter)
    started: float = field(default_factory=time.monotonic)


def _fuzz_database(database_url: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A database of its own: fuzzed admin routes create tasks and menus other tests must not see."""
    if not database_url.startswith("postgresql"):
        return f"sqlite:///{tmp_path_factory.mktemp('fuzzdb') / 'fuzz.db'}"
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(text(f"DROP SCHEMA IF EXISTS {FUZZ_SCHEMA} CASCADE"))
        conn.execute(text(f"CREATE SCHEMA {FUZZ_SCHEMA}"))
    engine.dispose()
    separator = "&" if "?" in database_url else "?"
    return f"{database_url}{separator}options={quote(f'-csearch_path={FUZZ_SCHEMA}')}"


def _seed(live: LiveServer) -> str:
    """A user granted every task, owning execution 1 (instruct, with a produced text, version 1)
    and execution 2 (an order): the pk examples in the spec (1, 2) name them."""
    from mojodex_core.users import create_user, grant, issue_token

    with live.db() as db:
        user = create_user(db, name="Fuzzer", email="fuzzer@example.com")
        token = issue_token(db, user)
        grant(db, user, None)
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {token}"
    listed = http.get(f"{live.base_url}/user_task", timeout=10).json()["user_tasks"]
    user_tasks = {t["name_for_system"]: t for t in listed}
    for name in ("test_email", "order_pizzeria"):
        created = http.put(f"{live.base_url}/user_task_execution", timeout=10,
                           json={"user_task_pk": user_tasks[name]["user_task_pk"]})
        assert created.status_code == 200, created.text
    seeded = http.post(f"{live.base_url}/produced_text", timeout=10, json={
        "user_task_execution_pk": 1, "title": "Seed", "production": "Seed text."})
    assert seeded.status_code == 200, seeded.text
    return token


# Module scope: the server and its connection pool end with this module, not with the session.
@pytest.fixture(scope="module")
def fuzz_target(
    database_url: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[FuzzTarget]:
    url = _fuzz_database(database_url, tmp_path_factory)
    upgrade(url)
    env = {**os.environ, "DATABASE_URL": url, "MOJODEX_ADMIN_SECRET": ADMIN_SECRET,
           "MOJODEX_SECRET_KEY": "fuzz-secret-key-0123456789"}
    subprocess.run([sys.executable, "-m", "backend.cli", "tasks", "load", str(REPO_ROOT / "tasks_config")],
                   env=env, cwd=REPO_ROOT, check=True, capture_output=True, timeout=120)
    with serving(live_settings(url, None)) as live:
        token = _seed(live)
        spec = requests.get(f"{live.base_url}/openapi.json", timeout=10).json()
        target = FuzzTarget(live, token, spec)
        yield target
        live.wait_idle(30)
        elapsed = time.monotonic() - target.started
        line = (f"schemathesis: {sum(target.sent.values())} requests to {len(target.sent)} operations in "
                f"{elapsed:.0f} s; statuses {dict(sorted(target.statuses.items()))}")
        capture = request.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():  # shown by a plain `make test` too
            print("\n" + line, flush=True)
            if os.environ.get("MOJODEX_FUZZ_TRACE"):
                print("slowest operations (s):", {k: round(v, 1) for k, v in target.seconds.most_common(6)})
        report = os.environ.get("MOJODEX_FUZZ_REPORT")
        if report:
            with open(report, "a", encoding="utf-8") as out:
                out.write(line + "\n")
    if url.startswith("postgresql"):
        engine = create_engine(database_url)
        with engine.begin() as conn:
            conn.execute(text(f"DROP SCHEMA IF EXISTS {FUZZ_SCHEMA} CASCADE"))
        engine.dispose()


def _is_admin(operation) -> bool:  # noqa: ANN001
    security = operation.definition.raw.get("security") or []
    return any("adminSecret" in entry for entry in security) and not any("userToken" in e for e in security)


def _fuzz_operation(target: FuzzTarget, operation, strategy, max_examples: int) -> None:  # noqa: ANN001
    credential = ADMIN_SECRET if _is_admin(operation) else f"Bearer {target.token}"

    @given(case=strategy)
    @settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    def run(case) -> None:  # noqa: ANN001
        response = case.call(base_url=target.live.base_url, headers={"Authorization": credential}, timeout=30)
        target.sent[f"{case.method} {case.path}"] += 1
        target.statuses[response.status_code] += 1
        if os.environ.get("MOJODEX_FUZZ_TRACE"):
            print(case.method, case.path, case.query, response.status_code, response.text[:120])
        case.validate_response(response, checks=CHECKS)

    run()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_api_conforms_to_its_spec(fuzz_target: FuzzTarget, mode: GenerationMode) -> None:
    """Every operation, valid then invalid requests: no 5xx, no answer outside the spec."""
    schema = schemathesis.openapi.from_dict(fuzz_target.spec)
    failures = []
    # DELETE last: deleting the seeded executions first would leave the other operations only 404s.
    operations = sorted((result.ok() for result in schema.get_all_operations()), key=lambda o: o.method == "delete")
    assert len(operations) >= 31
    for operation in operations:
        examples = EXAMPLES // 2 if operation.label in LARGE_BODIES else EXAMPLES
        strategies = [(operation.as_strategy(generation_mode=mode), examples)]
        if mode is GenerationMode.POSITIVE:  # the spec's examples first: pks 1 and 2 are the fuzzer's rows
            strategies[:0] = [(strategy, 5) for strategy in schema.get_strategies_from_examples(operation)]
        try:
            begun = time.monotonic()
            for strategy, max_examples in strategies:
                _fuzz_operation(fuzz_target, operation, strategy, max_examples)
            fuzz_target.seconds[operation.label] += time.monotonic() - begun
        except Unsatisfiable:
            continue  # nothing to make invalid (GET /health takes no input)
        except Exception as exc:  # one operation's failure must not hide the others'
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}")
    assert not failures, "\n\n".join(failures)
