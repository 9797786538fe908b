"""Parser honesty: how often the deterministic parser is wrong WITHOUT flagging it.

Usage: python bench/parser_honesty.py [PATH] [--show N]

PATH defaults to tests/order/data/honesty_set.json (hand-written utterances over the three shipped
menus, split into a TUNE and a HELD-OUT part before any result was looked at; see the file header).
Stock is ignored (every value in stock): the set measures parsing. Each entry's context turns are
parsed and applied first (update_state + get_next_action), then the entry's text is parsed. A parse
is *flagged* when confidence < 0.8 or ``unparsed`` is non-empty (the platform then asks the LLM or
the customer). Outcomes:

* expect "flag": right when flagged; otherwise a silent wrong parse;
* expect items: right when not flagged and the live items after ``update_state`` equal the expected
  ones (and the order-level flags match); a wrong unflagged parse is a silent wrong parse; a flagged
  one is not wrong (``flag_ok``) or, without ``flag_ok``, an unnecessary flag (counted, not wrong).

Exact match = entries handled right without help (clear ones parsed exactly, must-flag ones flagged).
Ends with one machine-readable line:
silent_wrong_rate_tune=... silent_wrong_rate_heldout=... exact_tune=... exact_heldout=... n=...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # allow running as a plain script from a checkout
    sys.path.insert(0, str(REPO_ROOT))

from mojodex_core.order import get_next_action, new_order, update_state
from mojodex_core.order.llm_parser import DEFAULT_THRESHOLD
from mojodex_core.order.menu import MENUS_DIR, Menu, load_menu
from mojodex_core.order.parsed_input import ParsedInput
from mojodex_core.order.parser import parse_deterministic

DEFAULT_DATA = REPO_ROOT / "tests" / "order" / "data" / "honesty_set.json"
ORDER_FLAGS = ("wants_checkout", "wants_cancel", "order_type", "customer_name")


def flagged(parsed: ParsedInput) -> bool:
    return parsed.confidence < DEFAULT_THRESHOLD or bool(parsed.unparsed)


def _canon_value(value: Any) -> Any:
    if isinstance(value, list):
        return sorted((_canon_value(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def canon_item(menu: Menu, item_type: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Fields that say something: not empty, not the menu default, quantity 1 left out."""
    tdef = menu.item_types.get(item_type)
    out: dict[str, Any] = {"type": item_type}
    for name, value in fields.items():
        if value is None or value == [] or (name == "quantity" and value == 1):
            continue
        fdef = tdef.fields.get(name) if tdef else None
        if fdef is not None and fdef.default is not None and value == fdef.default:
            continue
        out[name] = _canon_value(value)
    return out


def all_in_stock(menu: Menu) -> Menu:
    """The menu with every item available and every value in stock: the set measures parsing, not stock."""
    data = menu.model_dump()
    for tdef in data["item_types"].values():
        tdef["available"] = True
        for fdef in tdef["fields"].values():
            for value in fdef["values"]:
                value["in_stock"] = True
    return Menu.model_validate(data)


def run_entry(entry: dict[str, Any], menus: dict[str, Menu]) -> dict[str, Any]:
    menu = menus[entry["menu"]]
    tree = new_order(menu.id)
    for text in entry["context"]:
        tree, _diff = update_state(tree, parse_deterministic(text, menu, tree), menu)
        get_next_action(tree, menu)
    parsed = parse_deterministic(entry["text"], menu, tree)
    new, diff = update_state(tree, parsed, menu)
    got = [canon_item(menu, it.item_type, it.fields) for it in new.items.items if it.status != "skipped"]
    is_flagged = flagged(parsed)
    expect = entry["expect"]
    if expect == "flag":
        right = is_flagged
        outcome = "right" if right else "silent_wrong"
    else:
        want = [canon_item(menu, e["type"], {k: v for k, v in e.items() if k != "type"}) for e in expect["items"]]
        order = expect.get("order", {})
        same = want == got and all(getattr(parsed, k) == order.get(k, ParsedInput.model_fields[k].default)
                                   for k in ORDER_FLAGS)
        if is_flagged:
            outcome = "flagged_ok" if entry.get("flag_ok") else "over_flagged"
        else:
            outcome = "right" if same else "silent_wrong"
    return {"id": entry["id"], "part": entry["part"], "batch": entry.get("batch", 1), "outcome": outcome,
            "text": entry["text"],
            "confidence": parsed.confidence, "unparsed": parsed.unparsed, "got": got,
            "errors": [e.kind for e in diff.errors]}


def evaluate(path: Path = DEFAULT_DATA) -> dict[str, Any]:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    menus: dict[str, Menu] = {}
    results = []
    for entry in data["entries"]:
        if entry["menu"] not in menus:
            menus[entry["menu"]] = all_in_stock(load_menu(MENUS_DIR / f"{entry['menu']}.json"))
        results.append(run_entry(entry, menus))
    figures: dict[str, Any] = {"n": len(results), "results": results}
    for part in ("tune", "heldout"):
        rows = [r for r in results if r["part"] == part]
        n = max(len(rows), 1)
        figures[f"n_{part}"] = len(rows)
        figures[f"silent_wrong_rate_{part}"] = sum(r["outcome"] == "silent_wrong" for r in rows) / n
        figures[f"exact_{part}"] = sum(r["outcome"] == "right" for r in rows) / n
        figures[f"flagged_ok_{part}"] = sum(r["outcome"] == "flagged_ok" for r in rows) / n
        figures[f"over_flagged_{part}"] = sum(r["outcome"] == "over_flagged" for r in rows) / n
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=str(DEFAULT_DATA))
    ap.add_argument("--show", type=int, default=50, help="show up to N silent wrong / over-flagged entries")
    ap.add_argument("--part", choices=("tune", "heldout", "both"), default="tune",
                    help="which part's failures to list (tune by default: tune against it only)")
    args = ap.parse_args(argv)
    res = evaluate(Path(args.path))
    for part in ("tune", "heldout"):
        print(f"{part:8s} n={res[f'n_{part}']:3d}  silent wrong {res[f'silent_wrong_rate_{part}']:.3f}  "
              f"exact {res[f'exact_{part}']:.3f}  flagged (acceptable) {res[f'flagged_ok_{part}']:.3f}  "
              f"over-flagged {res[f'over_flagged_{part}']:.3f}")
    shown = [r for r in res["results"] if r["outcome"] in ("silent_wrong", "over_flagged")
             and (args.part == "both" or r["part"] == args.part)]
    for batch in sorted({r["batch"] for r in res["results"]}):
        for part in ("tune", "heldout"):
            rows = [r for r in res["results"] if r["batch"] == batch and r["part"] == part]
            n = max(len(rows), 1)
            print(f"  batch {batch} {part:8s} n={len(rows):3d}  silent wrong "
                  f"{sum(r['outcome'] == 'silent_wrong' for r in rows) / n:.3f}  "
                  f"exact {sum(r['outcome'] == 'right' for r in rows) / n:.3f}")
    for r in shown[: args.show]:
        print(f"  [{r['id']}] {r['outcome']}: {r['text']!r} conf={r['confidence']} unparsed={r['unparsed']} "
              f"got={r['got']} errors={r['errors']}")
    print(f"silent_wrong_rate_tune={res['silent_wrong_rate_tune']:.4f} "
          f"silent_wrong_rate_heldout={res['silent_wrong_rate_heldout']:.4f} "
          f"exact_tune={res['exact_tune']:.4f} exact_heldout={res['exact_heldout']:.4f} n={res['n']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
