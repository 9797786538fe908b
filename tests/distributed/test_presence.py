"""Push notifications in the cluster: the worker that answers decides, from the presence the
backends share through Redis (mojodex_core/push/redis_presence.py).

The cluster's notifier is the default one, the log: a push is a ``push to user <id>`` line in a
process's log (a worker's, as the workers publish the final replies).
"""

from __future__ import annotations

import time

from mojodex_core.push.redis_presence import RedisPresence
from tests.distributed.conftest import PRESENCE_TTL_S, answer_for
from tests.distributed.test_cluster import _send, _session
from tests.support.live import LiveServer

# A notification is sent on the push pool right after the final reply's publication.
PUSH_WAIT_S = 10.0


def _pushes(cluster, user_id: str) -> int:  # noqa: ANN001
    marker = f"push to user {user_id} ("
    return sum(path.read_text(errors="replace").count(marker) for path in cluster.log_dir.glob("*.log"))


def _wait_pushes(cluster, user_id: str, count: int, timeout: float = PUSH_WAIT_S) -> int:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while (seen := _pushes(cluster, user_id)) < count and time.monotonic() < deadline:
        time.sleep(0.1)
    return seen


def _presence(cluster) -> RedisPresence:  # noqa: ANN001
    return RedisPresence.from_url(cluster.redis_server.url)


def test_a_worker_does_not_push_to_a_user_connected_to_a_backend_and_pushes_once_gone(cluster, backends):
    a, b = backends
    client, pk, session_id = _session(b)
    socket = type(client)(a.base_url, client.token, client.user_id).socket(session_id)
    try:
        _send(client, pk, session_id, "fast are you there")
        assert socket.wait_event("mojo_message", timeout=30)[0]["text"] == answer_for("fast are you there")
        time.sleep(1.0)  # a notification decided with the final reply would be logged by now
        assert _pushes(cluster, client.user_id) == 0, "pushed to a user with an open socket"
    finally:
        socket.close()
    deadline = time.monotonic() + 10
    while _presence(cluster).online(client.user_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    _send(client, pk, session_id, "fast and now")
    assert _wait_pushes(cluster, client.user_id, 1) == 1, "no push to a user with no open socket"


def test_a_killed_backend_stops_counting_its_sockets_once_its_entries_expire(cluster, backends):
    a, b = backends
    client, pk, session_id = _session(b)
    socket = type(client)(a.base_url, client.token, client.user_id).socket(session_id)
    presence = _presence(cluster)
    assert presence.online(client.user_id)
    victim = next(r for r in cluster.roles if r.port == int(a.base_url.rsplit(":", 1)[1]))
    try:
        cluster.kill(victim)  # SIGKILL: no disconnect handler runs, its renewals stop
        killed_at = time.monotonic()
        assert presence.online(client.user_id), "the entries outlive the process until they expire"
        while presence.online(client.user_id) and time.monotonic() - killed_at < PRESENCE_TTL_S + 5:
            time.sleep(0.1)
        assert not presence.online(client.user_id), "a dead backend's socket still counts as online"
        assert time.monotonic() - killed_at > PRESENCE_TTL_S / 2
    finally:
        socket.close()
        cluster.roles.remove(victim)  # a fresh backend in its place, for the next tests
        restarted = cluster.start_backend(int(victim.name.removeprefix("backend")))
        cluster.wait_serving(restarted)
        backends[0] = LiveServer(restarted.url, a.platform)
    _send(client, pk, session_id, "fast anyone")
    assert _wait_pushes(cluster, client.user_id, 1) == 1
