"""Frame data model and the post-passes over a frame list: distribution and splitting.

* "both", "each", "all" after a list of items of one type give each of them what follows
  ("a large and a small pizza, both with ham") or, when nothing follows, what the last one got
  with "with" ("... with ham on both");
* an announced quantity followed by parts is split into those parts, each keeping what was said
  of the whole (type, size, style...): when the parts add up to it ("two large pizzas, one with ham
  and the other with olives", "five pizzas, two with ham and the rest with olives"), or when they
  come straight after it and add up to less - the rest stays as announced ("three pizzas, one with
  mushrooms" = two pizzas + one with mushrooms; "two cheeseburgers, one without pickles").
  Parts after "and" that follow a "with" of the whole are separate lines ("two pizzas with ham and
  one with olives" = three).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .lexicon import Sense


@dataclass
class Attr:
    senses: tuple[Sense, ...]
    negated: bool
    qualifier: str | None
    text: str
    neg_direct: bool = False  # the first value after the negation word ("no onions"), not later in its scope
    corrects: bool = False  # said after "wait"/"hold on": replaces an earlier value of its field


@dataclass
class Frame:
    number: float | None = None
    article: bool = False
    anchor: str | None = None  # item type named by a noun or an item-naming value
    has_noun: bool = False
    definite: bool = False  # "the latte": may refer to an item already in the order
    cancel: bool = False
    negated: bool = False  # "I don't want a latte": the item itself is negated, not ordered
    inherit: str | None = None  # type of the previous frame ("one with pepperoni")
    attrs: list[Attr] = field(default_factory=list)
    with_seen: bool = False
    and_mark: int | None = None
    after_with: bool = False  # a "with" was said since this frame started (anchored or not)
    with_mark: int | None = None  # len(attrs) at the first "with"
    split_child: bool = False  # started by a number/"the other": may be one part of "N pizzas, one with..."
    rest: bool = False  # "the rest": its number is what is left of the announced quantity
    after_and: bool = False  # started right after "and"
    joined_by_and: bool = False  # "and" (or "and the") right before it: "remove the pizza and the coke"
    ordinal: int | None = None  # "the second one": 1 ("the last": -1)
    unknown_head: bool = False  # values followed by a word the menu doesn't know ("a big mac"): not an order line
    name_attrs: int = 0  # how many of its last values are part of that unknown name
    pronoun: bool = False  # "a small one": its type is the previous item's
    noun_at: int | None = None  # len(attrs) when the noun came: values before it describe, after it change
    described_at: int | None = None  # "no olives on the small pizza": len(attrs) at "small", the values describing it
    described_end: int | None = None  # where those values end: at the noun, "one", "and", a comma, a verb...
    clause_at: int | None = None  # len(attrs) at the last "and"/comma: where a later clause's values start
    follows_with: bool = False  # started right after "with" ("... with a diet coke")
    report_only: bool = False  # reported in unparsed, not acted on ("a warm sesame bagel", "one of them")


@dataclass
class Segmentation:
    frames: list[Frame] = field(default_factory=list)
    flags: dict[str, Any] = field(default_factory=dict)
    unknown: list[str] = field(default_factory=list)
    content: int = 0
    bare_negation: bool = False  # a "no" that negated nothing: an answer
    modify: bool = False
    cancel_dangling: bool = False  # "forget it", "cancel that"
    doubts: list[str] = field(default_factory=list)  # words said but not representable ("half", a dangling "no")
    modify_current: bool = False  # opened with "make it"/"make that": a change of the current item
    opens_with_correction: bool = False  # "actually ...", "sorry, ..." before anything was ordered
    instead: bool = False  # "instead" was said: an added list value may be meant to replace one


def distribute(dists: list[tuple[list[Frame], Frame, set[int]]]) -> list[int]:
    """Copy to every item of the list what was said after "both/each/all" ("..., both with ham"),
    or, when nothing followed, what the last item got with "with" ("... with ham on both").
    Returns the positions of the "both"s that had nothing to give ("no ice in either")."""
    empty = []
    for pos, (group, cur, before) in enumerate(dists):
        tail = [a for a in cur.attrs if id(a) not in before]
        if not tail and cur.with_mark is not None:
            tail = cur.attrs[cur.with_mark:]
        if not tail:
            empty.append(pos)
        for frame in group:
            if frame is not cur:
                frame.attrs.extend(a for a in tail if all(a is not b for b in frame.attrs))
    return empty


def _inherit(whole: Frame, parts: list[Frame]) -> None:
    for part in parts:
        part.anchor, part.has_noun = whole.anchor, whole.has_noun
        part.definite, part.cancel = whole.definite, whole.cancel
        part.attrs = [*whole.attrs, *part.attrs]


def split(frames: list[Frame]) -> None:
    """Replace an announced quantity by its parts (see the module docstring), in place."""
    i = 0
    while i < len(frames):
        whole = frames[i]
        i += 1
        n = whole.number
        if not whole.anchor or n is None or whole.article or n < 2:
            continue
        run: list[Frame] = []
        # a part may name itself by a value when the whole only named the kind ("two drinks, a coke and a sprite")
        named_by_kind = whole.has_noun and not any(s.names_item for a in whole.attrs for s in a.senses)
        for frame in frames[i:]:
            own_name = frame.anchor == whole.anchor and named_by_kind
            if not (frame.split_child and (frame.anchor is None or own_name) and not frame.has_noun
                    and frame.inherit == whole.anchor and not frame.negated):
                break
            run.append(frame)
        matched = False
        for m in range(2, len(run) + 1):
            parts = run[:m]
            rests = [p for p in parts if p.rest]
            fixed = sum(p.number or 1 for p in parts if not p.rest)
            if len(rests) > 1 or fixed > n:
                break
            if rests and n - fixed >= 1:
                rests[0].number = n - fixed
            elif rests or fixed != n:
                continue
            _inherit(whole, parts)
            del frames[i - 1]
            i += m - 1
            matched = True
            break
        if matched or not run or run[0].after_and or whole.with_mark is not None:
            continue
        # "three pizzas, one with mushrooms": parts taken out of the announced number
        parts, fixed = [], 0.0
        for part in run:
            if part.rest or fixed + (part.number or 1) >= n:
                break
            parts.append(part)
            fixed += part.number or 1
        if parts:
            whole.number = n - fixed
            _inherit(whole, parts)
            i += len(parts)
