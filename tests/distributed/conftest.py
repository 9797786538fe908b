"""A real cluster for the distributed tests: 2 backend processes, 2 Celery workers, 1 beat.

Runs natively against the suite's Postgres database (TEST_DATABASE_URL) and a private
``redis-server`` this fixture starts on a free port (broker, Socket.IO message queue, seqs and
token streams), so the fault tests can really kill and restart it; skipped when TEST_REDIS_URL or
TEST_DATABASE_URL is absent (SQLite and in-process threads cannot be shared by processes the way
these tests need).
The LLM is a scripted OpenAI-compatible server in this process, answering every chat with
"Answer to <the user's text>." streamed word by word, so a stream can be checked against the
stored answer whichever worker ran it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from backend.cluster import Cluster
from mojodex_core.db import make_engine, make_session_factory, transaction
from mojodex_core.task_loader import store_spec
from mojodex_core.task_spec import validate_spec
from tests.support.live import ADMIN_SECRET, TEST_TASK, LiveServer
from tests.support.redis_server import RedisServer
from tests.support.scripted_llm import Reply, ScriptedLLMServer, asks_structured
from tests.support.tcp_proxy import TcpProxy

REDIS_URL = os.environ.get("TEST_REDIS_URL")
DATABASE_URL = os.environ.get("TEST_DATABASE_URL")
LEASE_S = 2.0
CHUNK_DELAY_S = 0.05
# A backend's Redis presence entries expire this long after its last renewal (test_presence.py).
PRESENCE_TTL_S = 6



def answer_for(text: str) -> str:
    return f"Answer to {text}."


def _responder(body: dict) -> Reply:
    if asks_structured(body):  # the title/summary job's call
        return Reply(json={"title": "A title", "summary": "A summary"})
    user = [m for m in body.get("messages", []) if m.get("role") == "user"]
    text = str(user[-1]["content"]) if user else ""
    words = re.findall(r"\S+\s*", answer_for(text))
    # "fast ..." messages stream at once (load); others slowly, so a process can die mid-stream.
    return Reply(chunks=words, delay_s=0.0 if text.startswith("fast") else CHUNK_DELAY_S)


@pytest.fixture(scope="package")
def cluster_llm() -> Iterator[ScriptedLLMServer]:
    server = ScriptedLLMServer().start()
    server.responder = _responder
    try:
        yield server
    finally:
        server.stop()


# Package scope: the cluster (and its beat, which sweeps the shared database) is gone before any
# other test of the suite runs.
@pytest.fixture(scope="package")
def cluster(database_url: str, cluster_llm: ScriptedLLMServer, tmp_path_factory) -> Iterator[Cluster]:  # noqa: ANN001
    if not (REDIS_URL and DATABASE_URL):
        pytest.skip("distributed tests need TEST_REDIS_URL and TEST_DATABASE_URL (CI sets both)")
    factory = make_session_factory(make_engine(database_url))
    with transaction(factory) as db:
        store_spec(db, validate_spec(TEST_TASK), "upsert")
    # MOJODEX_TEST_CLUSTER_LOGS keeps the processes' logs somewhere known (CI artefacts, debugging).
    logs = os.environ.get("MOJODEX_TEST_CLUSTER_LOGS")
    log_dir = Path(logs) if logs else tmp_path_factory.mktemp("cluster")
    # Every cluster process reaches Postgres through a proxy the fault tests can cut, and a
    # private Redis they can kill and restart (the machine's shared Redis is left alone).
    pg_proxy, pg_url = TcpProxy.for_url(DATABASE_URL, 5432)
    pg_proxy.start()
    redis_server = RedisServer(log_dir).start()
    redis_url = redis_server.url
    env = {
        "DATABASE_URL": pg_url,
        "REDIS_URL": redis_url,
        "MOJODEX_LLM_BASE_URL": cluster_llm.base_url,
        "MOJODEX_LLM_API_KEY": "test",
        "MOJODEX_LLM_TIMEOUT_S": "5",
        "MOJODEX_LLM_MAX_RETRIES": "1",
        "MOJODEX_ADMIN_SECRET": ADMIN_SECRET,
        "MOJODEX_SECRET_KEY": "test-secret-key-0123456789",
        "MOJODEX_TURN_LEASE_S": str(LEASE_S),
        "MOJODEX_SWEEP_INTERVAL_S": "0.5",
        "MOJODEX_PRESENCE_TTL_S": str(PRESENCE_TTL_S),
        "MOJODEX_TURN_TIMEOUT_S": "30",
        "MOJODEX_LOG_LEVEL": "INFO",
        # 5 processes share the machine's Postgres (max_connections 100) with other suites.
        "MOJODEX_DB_POOL_SIZE": "4",
        "MOJODEX_DB_MAX_OVERFLOW": "4",
        # One var dir for the cluster's processes, as on one host (llm_call spools: a killed worker's
        # rows are replayed by the next process to start), not the checkout's var/.
        "MOJODEX_VAR_DIR": str(log_dir / "var"),
    }
    cluster = Cluster(env=env, log_dir=log_dir, worker_concurrency=4)
    cluster.pg_proxy, cluster.redis_server = pg_proxy, redis_server
    try:
        cluster.start(timeout=90)
        yield cluster
    finally:
        cluster.stop()
        pg_proxy.close()
        redis_server.stop()
        factory.kw["bind"].dispose()


@pytest.fixture(scope="package")
def backends(cluster: Cluster, database_url: str) -> list[LiveServer]:
    """Each backend as a LiveServer-like handle (base_url, db(), new_user()) on the shared database."""
    platform = _DbOnly(database_url)
    return [LiveServer(role.url, platform) for role in cluster.roles if role.name.startswith("backend")]


class _DbOnly:
    """Enough of a Platform for LiveServer.db()/new_user(): the session factory."""

    def __init__(self, database_url: str) -> None:
        self.session_factory = make_session_factory(make_engine(database_url))
