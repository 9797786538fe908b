"""Security figures: revocation-to-disconnect time, throttling thresholds, a long polling replay.

    .venv/bin/python bench/security_figures.py [--sockets 10] [--guesses 200] [--replay 200]

A live server (tests/support/live.py) on a temporary SQLite file with the production
defaults of docs/security.md (rate limits, a 2 s socket token check), and, on loopback:
  1. --sockets users each open a socket; each token is revoked (what `mojodex users
     revoke-token` does) and the time until the socket is disconnected is measured;
  2. --guesses random tokens sent to GET /user_task as fast as one client can: how many are
     answered 401 before the first 429, and the guesses per second the client saw;
  3. the same with guesses sharing one 8-character token prefix;
  4. --guesses wrong admin secrets on GET /task;
  5. a session holding --replay events replayed to a python-socketio client on the polling
     transport (which refuses over 16 packets in one poll response).

The last line printed is machine readable:
    revoke_disconnect_p50_s=... revoke_disconnect_max_s=... auth_401_before_429=... ...
"""

from __future__ import annotations

import argparse
import logging
import secrets
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

import dataclasses  # noqa: E402

import requests  # noqa: E402
import socketio  # noqa: E402

from bench._measure import percentile  # noqa: E402
from mojodex_core.db.migrate import upgrade  # noqa: E402
from mojodex_core.security_config import RateLimitSettings  # noqa: E402
from mojodex_core.users import revoke_tokens  # noqa: E402
from tests.support.live import ADMIN_SECRET, live_settings, serving  # noqa: E402


def revocation(live, sockets: int) -> list[float]:  # noqa: ANN001
    delays = []
    for _ in range(sockets):
        client = live.new_user()
        sio = socketio.Client(reconnection=False)
        gone = threading.Event()
        sio.on("disconnect", lambda *_a, gone=gone: gone.set())
        sio.connect(live.base_url, auth={"token": client.token}, transports=["websocket"], wait_timeout=10)
        time.sleep(secrets.randbelow(1000) / 1000)  # revocations land anywhere in the check period
        with live.db() as db:
            revoke_tokens(db, token=client.token)
        start = time.monotonic()
        if not gone.wait(15):
            raise SystemExit("a revoked socket stayed connected for 15 s")
        delays.append(time.monotonic() - start)
    return delays


def guesses(url: str, headers_for, count: int) -> tuple[int, float, int]:  # noqa: ANN001
    """(answers before the first 429, guesses per second, 429s)."""
    http = requests.Session()
    statuses = []
    start = time.monotonic()
    for index in range(count):
        statuses.append(http.get(url, headers=headers_for(index), timeout=30).status_code)
    elapsed = time.monotonic() - start
    first = statuses.index(429) if 429 in statuses else count
    return first, count / elapsed, statuses.count(429)


def polling_replay(live, events: int) -> float:  # noqa: ANN001
    client = live.new_user()
    execution = client.new_execution()
    session_id = execution["session_id"]
    for index in range(events):
        live.platform.events.publish(session_id, "mojo_message", {"session_id": session_id, "text": f"m{index}"})
    received = []
    sio = socketio.Client(reconnection=False)
    sio.on("mojo_message", received.append)
    sio.connect(live.base_url, auth={"token": client.token}, transports=["polling"], wait_timeout=10)
    start = time.monotonic()
    ack = sio.call("start_session", {"session_id": session_id, "last_seq": 0}, timeout=60)
    elapsed = time.monotonic() - start
    sio.disconnect()
    if ack.get("replayed") != events or len(received) != events:
        raise SystemExit(f"polling replay incomplete: ack {ack}, {len(received)} received")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sockets", type=int, default=10)
    parser.add_argument("--guesses", type=int, default=200)
    parser.add_argument("--replay", type=int, default=200)
    args = parser.parse_args()
    logging.basicConfig(level=logging.ERROR)
    for noisy in ("werkzeug", "engineio.server", "socketio.server"):
        logging.getLogger(noisy).setLevel(logging.CRITICAL)
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/bench.db"
        upgrade(url)
        settings = dataclasses.replace(live_settings(url, None), rate_limits=RateLimitSettings())
        with serving(settings) as live:
            delays = revocation(live, args.sockets)
            print(f"revocation -> disconnect over {len(delays)} sockets: p50 {percentile(delays, 50):.2f} s, "
                  f"max {max(delays):.2f} s (check every {settings.socket_auth_recheck_s:.0f} s)")
            auth = guesses(live.base_url + "/user_task",
                           lambda _i: {"Authorization": f"Bearer {secrets.token_urlsafe(32)}"}, args.guesses)
            print(f"random token guesses: {auth[0]} answered 401 before the first 429; "
                  f"{auth[2]}/{args.guesses} got 429 ({auth[1]:.0f} guesses/s)")
        with serving(settings) as live:  # a fresh address count
            prefix = secrets.token_urlsafe(6)[:8]
            same_prefix = guesses(live.base_url + "/user_task",
                                  lambda _i: {"Authorization": f"Bearer {prefix}{secrets.token_urlsafe(30)}"},
                                  args.guesses)
            print(f"guesses sharing a token prefix: {same_prefix[0]} answered 401 before the first 429")
        with serving(settings) as live:
            admin = guesses(live.base_url + "/task", lambda i: {"Authorization": f"{ADMIN_SECRET}-{i}"}, args.guesses)
            print(f"admin secret guesses: {admin[0]} answered 403 before the first 429; "
                  f"{admin[2]}/{args.guesses} got 429")
            replay_s = polling_replay(live, args.replay)
            print(f"polling client: {args.replay} events replayed in {replay_s * 1000:.0f} ms")
    print(
        f"revoke_disconnect_p50_s={percentile(delays, 50):.2f} revoke_disconnect_max_s={max(delays):.2f} "
        f"auth_401_before_429={auth[0]} prefix_401_before_429={same_prefix[0]} admin_403_before_429={admin[0]} "
        f"polling_replay_events={args.replay} polling_replay_ms={replay_s * 1000:.0f}"
    )


if __name__ == "__main__":
    main()
