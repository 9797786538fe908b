"""bench/order_turn.py runs end to end with tiny counts and ends with its machine-readable line."""

from __future__ import annotations

import re

from bench import order_turn


def test_order_turn_bench_reports_its_line(capsys):
    assert order_turn.main(["--turns", "3", "--sessions", "2", "--session-turns", "2", "--warmup", "1"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert re.fullmatch(
        r"order_turn_p50_ms_1=[\d.]+ order_turn_p99_ms_1=[\d.]+ order_turn_p50_ms_2=[\d.]+ order_turn_p99_ms_2=[\d.]+",
        last,
    ), last
