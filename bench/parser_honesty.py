"""Parser honesty: how often the deterministic parser is wrong WITHOUT flagging it.

Usage: python bench/parser_honesty.py [PATH ...] [--show N] [--part tune|heldout|both]

PATH defaults to tests/order/data/honesty_set.json (hand-written utterances over the three shipped
menus, split into a TUNE and a HELD-OUT part before any result was looked at; see the file header)
plus tests/order/data/honesty_heldout2.json (a second held-out set, part HELDOUT2, written and
committed before the parser changes it measures; it also defines a menu of its own under "menus").
The old held-out part was reported and tuned around, so HELDOUT2 is the clean held-out figure: its
individual outcomes are never listed (only aggregates), so that nobody fixes the parser against it.
Stock is ignored (every value in stock): the set measures parsing. Each entry's context turns are
parsed and applied first (update_state + get_next_action), then the entry's text is parsed. A parse
is *flagged* when confidence < 0.8 or ``unparsed`` is non-empty (the platform then asks the LLM or
the customer). Outcomes:

* expect "flag": right when flagged; otherwise a silent wrong parse;
* expect items: right when not flagged and the live items after ``update_state`` equal the expected
  ones (and the order-level flags match); a wrong unflagged parse is a silent wrong parse; a flagged
  one is not wrong (``flag_ok``) or, without ``flag_ok``, an unnecessary flag (counted, not wrong).

Exact match = entries handled right without help (clear ones parsed exactly, must-flag ones flagged).
Unnecessary flags = clear entries (no ``flag_ok``) that were flagged anyway.
Calibration: per confidence bucket, how many parses the platform would take as-is (not flagged)
and how many of those are wrong - a confidence that means something has few wrong ones high up.
Ends with one machine-readable line:
silent_wrong_rate_tune=... silent_wrong_rate_heldout=... silent_wrong_rate_heldout2=... exact_tune=...
exact_heldout=... exact_heldout2=... over_flagged_heldout2=... n=...
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
HELDOUT2_DATA = REPO_ROOT / "tests" / "order" / "data" / "honesty_heldout2.json"
PARTS = ("tune", "heldout", "heldout2")
BUCKETS = ((0.0, 0.8), (0.8, 0.9), (0.9, 0.95), (0.95, 1.0), (1.0, 1.01))
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
            "text": entry["text"], "expect": "flag" if expect == "flag" else "items",
            "flag_ok": bool(entry.get("flag_ok")), "correct": expect != "flag" and same,
            "confidence": parsed.confidence, "unparsed": parsed.unparsed, "got": got,
            "errors": [e.kind for e in diff.errors]}


def load_entries(paths: list[Path]) -> tuple[list[dict[str, Any]], dict[str, Menu]]:
    """Entries of every file, and the menus they use (a file's own "menus" first, then tasks_config)."""
    entries: list[dict[str, Any]] = []
    menus: dict[str, Menu] = {}
    for path in paths:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        for menu_id, raw in data.get("menus", {}).items():
            menus[menu_id] = all_in_stock(Menu.model_validate(raw))
        entries.extend(data["entries"])
    for entry in entries:
        if entry["menu"] not in menus:
            menus[entry["menu"]] = all_in_stock(load_menu(MENUS_DIR / f"{entry['menu']}.json"))
    return entries, menus


def part_figures(rows: list[dict[str, Any]]) -> dict[str, float]:
    n = max(len(rows), 1)
    clear = [r for r in rows if r["expect"] == "items" and not r["flag_ok"]]
    return {"n": len(rows),
            "silent_wrong_rate": sum(r["outcome"] == "silent_wrong" for r in rows) / n,
            "exact": sum(r["outcome"] == "right" for r in rows) / n,
            "flagged_ok": sum(r["outcome"] == "flagged_ok" for r in rows) / n,
            "over_flagged": sum(r["outcome"] == "over_flagged" for r in rows) / n,
            # share of the clear entries flagged for nothing (the customer is asked needlessly)
            "unnecessary_flag_rate": sum(r["outcome"] == "over_flagged" for r in clear) / max(len(clear), 1)}


def calibration(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per confidence bucket, the parses with nothing unparsed and how many of them are wrong.

    Wrong = the parse is not what was meant: a must-flag entry (the parser cannot represent it), or a
    clear entry whose items differ. A confidence that means something has few wrong parses high up.
    """
    out = []
    for low, high in BUCKETS:
        inside = [r for r in rows if low <= r["confidence"] < high and not r["unparsed"]]
        label = f"[{low:.2f},{high:.2f})" if high <= 1.0 else "1.00"
        out.append({"bucket": label, "n": len(inside), "wrong": sum(not r["correct"] for r in inside)})
    return out


def evaluate(path: Path = DEFAULT_DATA, heldout2: Path | None = HELDOUT2_DATA) -> dict[str, Any]:
    paths = [Path(path)] + ([Path(heldout2)] if heldout2 is not None and Path(heldout2).exists() else [])
    entries, menus = load_entries(paths)
    results = [run_entry(entry, menus) for entry in entries]
    figures: dict[str, Any] = {"n": len(results), "results": results}
    for part in PARTS:
        rows = [r for r in results if r["part"] == part]
        for key, value in part_figures(rows).items():
            figures[f"{key}_{part}"] = value
        figures[f"calibration_{part}"] = calibration(rows)
    return figures


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default=str(DEFAULT_DATA))
    ap.add_argument("--heldout2", default=str(HELDOUT2_DATA), help="the second held-out file ('' for none)")
    ap.add_argument("--show", type=int, default=50, help="show up to N silent wrong / over-flagged entries")
    # heldout2 is deliberately not a choice: its individual outcomes are never listed
    ap.add_argument("--part", choices=("tune", "heldout", "both"), default="tune",
                    help="which part's failures to list (tune by default; heldout2's never)")
    args = ap.parse_args(argv)
    res = evaluate(Path(args.path), Path(args.heldout2) if args.heldout2 else None)
    for part in PARTS:
        print(f"{part:8s} n={res[f'n_{part}']:3d}  silent wrong {res[f'silent_wrong_rate_{part}']:.4f}  "
              f"exact {res[f'exact_{part}']:.3f}  flagged (acceptable) {res[f'flagged_ok_{part}']:.3f}  "
              f"over-flagged {res[f'over_flagged_{part}']:.3f}  "
              f"unnecessary flags {res[f'unnecessary_flag_rate_{part}']:.3f} of clear entries")
    for part in PARTS:
        cells = "  ".join(f"{c['bucket']} {c['wrong']}/{c['n']}" for c in res[f"calibration_{part}"])
        print(f"  calibration {part:8s} (wrong/taken per confidence): {cells}")
    shown = [r for r in res["results"] if r["outcome"] in ("silent_wrong", "over_flagged")
             and r["part"] != "heldout2" and (args.part == "both" or r["part"] == args.part)]
    for batch in sorted({r["batch"] for r in res["results"] if r["part"] != "heldout2"}):
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
          f"silent_wrong_rate_heldout2={res['silent_wrong_rate_heldout2']:.4f} "
          f"exact_tune={res['exact_tune']:.4f} exact_heldout={res['exact_heldout']:.4f} "
          f"exact_heldout2={res['exact_heldout2']:.4f} "
          f"unnecessary_flag_rate_heldout2={res['unnecessary_flag_rate_heldout2']:.4f} n={res['n']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
