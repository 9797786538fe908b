"""``only_phrases``: the text says nothing but phrases of the given keyword lists (and fillers).
Its fillers are normalised once and its phrase lists sorted once, not at every call; the answers
are those of the implementation that did it at every call."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mojodex_core.order.conversation import resources
from mojodex_core.order.conversation.resources import FILLERS, keywords, normalise, only_phrases

KEYS = ("yes", "no", "done", "needs_time", "never_mind", "not_right", "goodbye")


def reference(norm_text: str, *phrase_lists: tuple[str, ...]) -> bool:
    """only_phrases as it was (commit 74eeacb)."""
    rest = f" {norm_text} "
    found = False
    for phrase in sorted({p for lst in phrase_lists for p in lst}, key=len, reverse=True):
        if phrase and f" {phrase} " in rest:
            rest = rest.replace(f" {phrase} ", " ")
            found = True
    for filler in sorted(FILLERS, key=len, reverse=True):
        rest = rest.replace(f" {normalise(filler)} ", " ")
    return found and not rest.strip()


def lists(language: str) -> list[tuple[str, ...]]:
    kw = keywords(language)
    return [kw.get(key, ()) for key in KEYS]


WORDS = sorted({w for language in ("en", "fr") for lst in lists(language) for p in lst for w in p.split()}
               | {normalise(f) for f in FILLERS} | {"bagel", "large", "pizza", "2", "the"})


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(["en", "fr"]), st.lists(st.sampled_from(WORDS), max_size=6), st.integers(1, len(KEYS)))
def test_the_same_answers_as_before(language, words, n_lists):
    text = " ".join(words)
    chosen = lists(language)[:n_lists]
    assert only_phrases(text, *chosen) == reference(text, *chosen)
    assert only_phrases(text, *(list(lst) for lst in chosen)) == reference(text, *chosen)  # lists, not tuples


def test_known_answers():
    en = lists("en")
    assert only_phrases("yes please", *en) and only_phrases("ok thats all thanks", *en)
    assert not only_phrases("yes a large bagel", *en) and not only_phrases("please", *en)


def test_fillers_are_not_normalised_at_every_call(monkeypatch):
    calls = []
    monkeypatch.setattr(resources, "normalise", lambda text: calls.append(text) or text)
    en = lists("en")
    for _ in range(5):
        only_phrases("yes please", *en)
    assert calls == []
