"""bench/conversation_turns.py runs and ends with one machine-readable line (no timing assertions)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def test_bench_prints_a_machine_readable_line(capsys):
    spec = importlib.util.spec_from_file_location("conversation_turns", REPO / "bench" / "conversation_turns.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    res = module.main(1)
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(r"turns=\d+ p50_ms=[0-9.]+ p99_ms=[0-9.]+", last)
    assert res["turns"] == sum(len(s) for s in module.SCRIPTS.values())
