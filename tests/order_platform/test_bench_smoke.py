"""bench/order_turn.py runs end to end with tiny counts, on the production server and on the
test suite's, and ends with its machine-readable line."""

from __future__ import annotations

import re

import pytest

from bench import order_turn


@pytest.mark.parametrize("server", [[], ["--live"]], ids=["mojodex serve", "live"])
def test_order_turn_bench_reports_its_line(capsys, server):
    assert order_turn.main(["--turns", "3", "--sessions", "2", "--session-turns", "2", "--warmup", "1", *server]) == 0
    out = capsys.readouterr().out
    assert ("server werkzeug" if server else "server `mojodex serve`") in out
    last = out.strip().splitlines()[-1]
    assert re.fullmatch(
        r"order_turn_p50_ms_1=[\d.]+ order_turn_p99_ms_1=[\d.]+ order_turn_p50_ms_2=[\d.]+ order_turn_p99_ms_2=[\d.]+",
        last,
    ), last


def test_profiling_needs_the_live_server():
    with pytest.raises(SystemExit):
        order_turn.main(["--profile", "cpu"])
