"""Per-turn latency of the order conversation engine (no LLM): scripted conversations on the shipped menus.

Usage: .venv/bin/python bench/conversation_turns.py [ROUNDS]
Prints per-stage p50/p99 (from TurnOutcome.timings_ms) and a final machine-readable line
``turns=... p50_ms=... p99_ms=...`` (wall time of converse()).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from time import perf_counter

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mojodex_core.order import load_menu  # noqa: E402
from mojodex_core.order.conversation import TurnInput, converse, start_conversation  # noqa: E402

SCRIPTS = {
    "bagel_shop": ["Hi, I'd like an everything bagel with lox and a large iced latte", "yes please", "pickup",
                   "how much is a mocha?", "no thanks, that's all", "Dana", "dana@example.com", "in store", "yes"],
    "pizzeria": ["two large pepperoni pizzas and a diet coke", "make the second one thin crust", "no",
                 "delivery", "12 Main Street", "that's it", "Sam", "555-123-4567", "card", "yes"],
    "drive_thru": ["a number 2 combo medium with a sprite and a large fries", "both large", "pickup",
                   "what's the weather like", "that's all", "Lee", "lee@example.com", "in store", "yes"],
}


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(rounds: int = 20) -> dict[str, float]:
    wall: list[float] = []
    stages: dict[str, list[float]] = {}
    for _ in range(rounds):
        for menu_id, script in SCRIPTS.items():
            menu = load_menu(ROOT / "tasks_config" / "menus" / f"{menu_id}.json")
            conv, _ = start_conversation(menu)
            for text in script:
                start = perf_counter()
                out = converse(conv, TurnInput(text=text), menu)
                wall.append((perf_counter() - start) * 1000)
                for k, v in out.timings_ms.items():
                    stages.setdefault(k, []).append(v)
                conv = out.conversation
    for k, v in stages.items():
        print(f"{k:<10} p50 {statistics.median(v):.3f} ms  p99 {pct(v, 0.99):.3f} ms")
    res = {"turns": len(wall), "p50_ms": round(statistics.median(wall), 3), "p99_ms": round(pct(wall, 0.99), 3)}
    print(f"turns={res['turns']} p50_ms={res['p50_ms']} p99_ms={res['p99_ms']}")
    return res


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
