"""Evaluate the deterministic order parser on the PIZZA dataset (unordered exact match).

Usage: python bench/pizza_eval.py [PATH] [--menu MENU_JSON] [--show-errors N]

PATH defaults to ../shared/data/pizza/PIZZA_dev.json relative to the repository root.
The data is read at run time and never copied into the project (CC-BY-NC).
Prints a report and ends with one machine-readable line:
exact_match=<0..1> n=<count> p50_ms=<float> p99_ms=<float> flagged=<0..1>
``flagged`` is the share of utterances the parser flags (confidence under the threshold or words left
unparsed): every PIZZA utterance is a clear order, so each flag there is an unnecessary one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # allow running as a plain script from a checkout
    sys.path.insert(0, str(REPO_ROOT))

from mojodex_core.order.exr import error_categories, to_exr, unordered_equal
from mojodex_core.order.llm_parser import DEFAULT_THRESHOLD
from mojodex_core.order.menu import load_menu
from mojodex_core.order.parser import parse_deterministic

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "pizza" / "PIZZA_dev.json"
DEFAULT_MENU = REPO_ROOT / "tasks_config" / "menus" / "pizzeria.json"


def _field(row: dict[str, Any], suffix: str) -> Any:
    """Keys are prefixed by the split (``dev.SRC``, ``test.SRC``): accept any prefix."""
    for key, value in row.items():
        if key == suffix or key.endswith("." + suffix):
            return value
    return None


def load_rows(path: Path) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8").strip()
    if text.startswith("["):
        return list(json.loads(text))
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def _percentile(sorted_values: list[float], pct: float) -> float:
    if not sorted_values:
        return 0.0
    k = min(len(sorted_values) - 1, max(0, round(pct / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def evaluate(path: Path | str = DEFAULT_DATA, menu_path: Path | str = DEFAULT_MENU) -> dict[str, Any]:
    """Parse every SRC, compare with EXR; return rates, error categories, timings and failures."""
    menu = load_menu(menu_path)
    rows = load_rows(Path(path))
    parse_deterministic("warm up: a large pizza and a coke", menu)  # lexicon compile is not per-utterance
    matched = flagged = 0
    pcfg_known = pcfg_ok = 0
    categories: Counter[str] = Counter()
    timings: list[float] = []
    cpu: list[float] = []  # thread CPU time: the parser's own cost, without preemption on a loaded host
    failures: list[dict[str, Any]] = []
    for row in rows:
        src, gold = _field(row, "SRC"), _field(row, "EXR")
        start, cpu_start = time.perf_counter(), time.thread_time()
        parsed = parse_deterministic(src, menu)
        timings.append((time.perf_counter() - start) * 1000.0)
        cpu.append((time.thread_time() - cpu_start) * 1000.0)
        predicted = to_exr(parsed, menu)
        flagged += parsed.confidence < DEFAULT_THRESHOLD or bool(parsed.unparsed)
        if unordered_equal(predicted, gold):
            matched += 1
        else:
            cats = error_categories(predicted, gold)
            categories.update(cats)
            failures.append({"src": src, "gold": gold, "predicted": predicted, "categories": cats})
        flag = _field(row, "PCFG_ERR")
        if flag is not None:
            pcfg_known += 1
            pcfg_ok += str(flag).strip().lower() == "false"
    timings.sort()
    cpu.sort()
    n = len(rows)
    return {
        "n": n,
        "exact_match": matched / n if n else 0.0,
        "flagged": flagged / n if n else 0.0,
        "pcfg_exact_match": pcfg_ok / pcfg_known if pcfg_known else None,
        "categories": dict(categories.most_common()),
        "p50_ms": _percentile(timings, 50),
        "p99_ms": _percentile(timings, 99),
        "mean_ms": statistics.fmean(timings) if timings else 0.0,
        "cpu_p50_ms": _percentile(cpu, 50),
        "cpu_p99_ms": _percentile(cpu, 99),
        "failures": failures,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=str(DEFAULT_DATA))
    ap.add_argument("--menu", default=str(DEFAULT_MENU))
    ap.add_argument("--show-errors", type=int, default=10, help="print up to N failing utterances")
    args = ap.parse_args(argv)
    if not Path(args.path).exists():
        print(f"error: data file not found: {args.path}", file=sys.stderr)
        return 2
    res = evaluate(args.path, args.menu)
    print(f"data:              {args.path}")
    print(f"utterances:        {res['n']}")
    print(f"exact match:       {res['exact_match']:.4f}")
    print(f"flagged:           {res['flagged']:.4f} (all clear orders: each flag is an unnecessary one)")
    pcfg = res["pcfg_exact_match"]
    print(f"dataset grammar:   {pcfg:.4f} (from PCFG_ERR flags)" if pcfg is not None else "dataset grammar:   n/a")
    print("errors by category:" + ("" if res["categories"] else " none"))
    for cat, count in res["categories"].items():
        print(f"  {cat:<22}{count}")
    print(f"parse time (wall): p50 {res['p50_ms']:.3f} ms, p99 {res['p99_ms']:.3f} ms, mean {res['mean_ms']:.3f} ms")
    print(f"parse time (cpu):  p50 {res['cpu_p50_ms']:.3f} ms, p99 {res['cpu_p99_ms']:.3f} ms")
    for fail in res["failures"][: args.show_errors]:
        print(f"- {fail['src']}\n    gold: {fail['gold']}\n    got:  {fail['predicted']}")
        print(f"    why:  {fail['categories']}")
    print(f"exact_match={res['exact_match']:.4f} n={res['n']} p50_ms={res['p50_ms']:.3f} p99_ms={res['p99_ms']:.3f} "
          f"flagged={res['flagged']:.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
