"""The PIZZA dev-set evaluation (skipped when ../shared is not available)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEV = REPO.parent / "shared" / "data" / "pizza" / "PIZZA_dev.json"


def _bench():
    spec = importlib.util.spec_from_file_location("pizza_eval", REPO / "bench" / "pizza_eval.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not DEV.exists(), reason=f"PIZZA dev file not available at {DEV}")
def test_dev_exact_match_at_least_95_percent():
    res = _bench().evaluate(DEV)
    assert res["n"] == 348
    assert res["exact_match"] >= 0.95, res["failures"][:5]
    assert 0.6 < res["pcfg_exact_match"] < 0.8


def test_bench_reports_machine_readable_line(tmp_path, capsys):
    data = tmp_path / "mini.json"
    data.write_text(
        '{"test.SRC": "two large cokes", "test.EXR": "(ORDER (DRINKORDER (NUMBER 2 ) (SIZE LARGE ) '
        '(DRINKTYPE COKE ) ) )", "test.PCFG_ERR": "False"}\n'
        '{"test.SRC": "a pizza", "test.EXR": "(ORDER (PIZZAORDER (NUMBER 3 ) ) )", "test.PCFG_ERR": "True"}\n'
    )
    assert _bench().main([str(data)]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[-1].startswith("exact_match=0.5000 n=2 p50_ms=")
    assert any("wrong count" in line for line in out)
