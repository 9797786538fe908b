"""bench/turn_overhead.py still runs end to end (at a tiny size) and ends with its machine-readable line.

Not a performance test: no figure is checked, only that every phase ran, every streamed text
equalled its stored text (the bench exits 1 otherwise) and the last line has every key.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
KEYS = ("direct_first_token_p50_ms", "first_token_p50_ms", "overhead_p50_ms", "turns_per_s", "cpu_ms_per_turn",
        "tokens_per_s", "open_loop_p99_ms")


def test_the_bench_runs_the_production_server_and_prints_its_line(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "bench/turn_overhead.py", "--sessions", "3", "--messages", "2", "--single-turns", "3",
         "--draft-tokens", "20", "--open-rate", "5", "--open-seconds", "1", "--deadline", "150"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "platform embedded (mojodex serve)" in run.stdout
    last = run.stdout.strip().splitlines()[-1]
    figures = dict(re.findall(r"(\w+)=(\S+)", last))
    assert tuple(figures) == KEYS, last
    for key, value in figures.items():
        float(value)  # every figure is a number (nan would mean a phase measured nothing)
        assert value != "nan", f"{key} is nan: {last}"
    assert "3/3 drafts streamed == stored == scripted" in run.stdout


def test_the_long_session_bench_runs_and_prints_its_line(tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    run = subprocess.run(
        [sys.executable, "bench/long_session.py", "--history", "40", "--turns", "10"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=180,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    last = run.stdout.strip().splitlines()[-1]
    figures = dict(re.findall(r"(\w+)=(\S+)", last))
    assert tuple(figures) == ("history_exchanges", "short_first_token_p50_ms", "long_first_token_p50_ms",
                              "short_cpu_ms_per_turn", "long_cpu_ms_per_turn", "long_prompt_messages"), last
    assert figures["history_exchanges"] == "40" and int(figures["long_prompt_messages"]) > 80


def test_a_production_server_that_fails_to_start_is_not_left_running(tmp_path):
    import pytest

    from bench._production import ProductionServer

    var_dir = tmp_path / "var"
    var_dir.mkdir()
    with pytest.raises(Exception):  # noqa: B017 - it is not serving yet when the wait ends
        ProductionServer(f"sqlite:///{tmp_path}/bench.db", None, var_dir, start_timeout_s=0.3)
    left = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if str(var_dir).encode() in environ.read_bytes():
                left.append(environ.parent.name)
        except OSError:
            continue
    assert left == [], f"processes left running: {left}"


def test_the_long_session_history_is_stored_as_turns_leave_it(tmp_path):
    # was: the answers' text_with_tags was dropped (a multi-row INSERT takes its columns from the
    # first row, a user message without one), so the bench's prompts held shorter answers
    from types import SimpleNamespace

    from sqlalchemy import select

    from bench.long_session import seed_history
    from mojodex_core.db import make_engine, make_session_factory
    from mojodex_core.db.migrate import upgrade
    from mojodex_core.db.models import Message, UserTaskExecution
    from tests.unit._rows import execution_pk

    url = f"sqlite:///{tmp_path / 'h.db'}"
    upgrade(url)
    engine = make_engine(url)
    factory = make_session_factory(engine)
    with factory.begin() as db:
        pk = execution_pk(db)
        session_id = db.get(UserTaskExecution, pk).session_id
    seed_history(factory, SimpleNamespace(session_id=session_id, pk=pk), 7)
    with factory() as db:
        rows = db.scalars(select(Message).where(Message.session_id == session_id).order_by(Message.message_pk)).all()
    engine.dispose()
    users, answers = rows[::2], rows[1::2]
    assert [m.sender for m in users] == ["user"] * 7 and [m.sender for m in answers] == ["assistant"] * 7
    assert [u.answer_message_fk for u in users] == [a.message_pk for a in answers]
    assert all(a.text_with_tags and a.text_with_tags.startswith("<user_language>") for a in answers)
    assert all(u.text_with_tags is None and u.status == "answered" for u in users)
