"""Per-menu lexicon: surface forms -> menu entities and grammar words.

A :class:`Lexicon` is compiled once per menu (see :func:`get_lexicon`) into a
first-token index of normalised phrases, so chunking an utterance is a handful of
dict lookups per token. Menu phrases and input are normalised alike by the tokenizer
(:mod:`tokens`), so "two large pizzas" and "2 large pizza" look the same to the parser. Unknown words
get one fuzzy lookup (rapidfuzz, cached) against the menu vocabulary to absorb
misspellings ("peperonni", "pineaple").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from rapidfuzz import fuzz, process
from rapidfuzz.distance import OSA

from . import grammar_words as gw
from .menu import Menu
from .tokens import NUMBER_RE, Token, fmt_number, norm_phrase, norm_word, tokenize

# The value of a sense naming a field as a whole ("spread", "toppings"): "no spread" clears the field.
WHOLE_FIELD = "*"


@dataclass(frozen=True)
class Sense:
    """One reading of a menu phrase: a noun naming an item type, a value of a field, or (value ``WHOLE_FIELD``)
    a field as a whole."""

    item_type: str
    field: str | None  # None: the phrase names the item itself ("pizza")
    value: Any = None
    names_item: bool = False


@dataclass(frozen=True)
class Entry:
    kind: str  # "menu" or a grammar kind from grammar_words.KINDS
    senses: tuple[Sense, ...] = ()
    payload: Any = None


class Chunk(NamedTuple):
    kind: str  # menu | num | unknown | boundary | count_word | grammar kinds
    start: int  # token span [start, end)
    end: int
    senses: tuple[Sense, ...]
    payload: Any
    text: str
    fuzzy: int = 0  # tokens of the chunk read through a misspelling correction (a guess)


class Lexicon:
    """Phrase index for one menu (build with :func:`get_lexicon`)."""

    def __init__(self, menu: Menu) -> None:
        self.menu = menu
        entries: dict[tuple[str, ...], Entry] = {}
        for kind, phrases in gw.GRAMMAR.items():
            for phrase in phrases:
                entries[norm_phrase(phrase)] = Entry(kind, payload=phrases[phrase])
        # the menu's own non-entity vocabulary: multi-word fillers and count words are phrases
        for phrase in menu.fillers:
            if len(norm_phrase(phrase)) > 1:
                entries[norm_phrase(phrase)] = Entry("filler")
        for phrase in menu.count_words:
            entries[norm_phrase(phrase)] = Entry("count_word")
        self.fillers = FILLERS | {k[0] for k in map(norm_phrase, menu.fillers) if len(k) == 1}
        for q_id, phrases in menu.qualifiers.items():
            for phrase in phrases:
                entries[norm_phrase(phrase)] = Entry("qual", payload=q_id)
        senses: dict[tuple[str, ...], list[Sense]] = {}
        for t_name, tdef in menu.item_types.items():
            for noun in [tdef.label, *tdef.names]:
                senses.setdefault(norm_phrase(noun), []).append(Sense(t_name, None))
            for f_name, fdef in tdef.fields.items():
                for phrase, value in _field_phrases(fdef):
                    key = norm_phrase(phrase)
                    if key:
                        senses.setdefault(key, []).append(Sense(t_name, f_name, value, fdef.names_item))
        for key, sense_list in senses.items():
            entries[key] = Entry("menu", senses=tuple(dict.fromkeys(sense_list)))
        # nouns naming a field as a whole ("no spread", "no toppings"): a count word keeps its kind ("a two topping
        # pizza") and reads as the field only in a negation; a word another phrase normalises to ("extras" vs the
        # qualifier "extra") is matched as said
        raw_keep: set[str] = set()
        for t_name, tdef in menu.item_types.items():
            for f_name, fdef in tdef.fields.items():
                for noun in fdef.names:
                    key = norm_phrase(noun)
                    if key in entries and entries[key].kind not in ("menu", "count_word"):
                        key = tuple(t.raw for t in tokenize(noun) if t.norm not in (".", ","))
                        raw_keep.update(key)
                    sense = Sense(t_name, f_name, WHOLE_FIELD)
                    old_entry = entries.get(key)
                    kind = old_entry.kind if old_entry is not None and old_entry.kind == "count_word" else "menu"
                    kept = old_entry.senses if old_entry is not None and old_entry.kind == kind else ()
                    entries[key] = Entry(kind, senses=tuple(dict.fromkeys((*kept, sense))))
        self.raw_keep: frozenset[str] = frozenset(raw_keep)
        self.index: dict[str, list[tuple[tuple[str, ...], Entry]]] = {}
        for key, entry in entries.items():
            self.index.setdefault(key[0], []).append((key, entry))
        for lst in self.index.values():
            lst.sort(key=lambda kv: -len(kv[0]))
        # every word of every phrase: such a word is never "corrected" by the fuzzy lookup
        self.known = frozenset(w for key in entries for w in key)
        menu_words = {w for key, e in entries.items() if e.kind == "menu" for w in key
                      if len(w) >= 4 and not NUMBER_RE.fullmatch(w)}
        grammar_words = {w for key, e in entries.items() if e.kind != "menu" for w in key
                         if len(w) >= 5 and w.isalpha()}
        self.vocab = sorted(menu_words | grammar_words)
        self._anagrams: dict[str, list[str]] = {}
        for w in self.vocab:
            self._anagrams.setdefault("".join(sorted(w)), []).append(w)
        self._fuzzy_cache: dict[tuple[str, str | None], str | None] = {}
        # "<number> <unit>" for measure fields, also for amounts the menu doesn't list ("a 12 oz coke")
        self.units: dict[str, list[tuple[tuple[str, ...], str, str, str]]] = {}
        for t_name, tdef in menu.item_types.items():
            for f_name, fdef in tdef.fields.items():
                for unit_id, forms in (fdef.units or {}).items() if fdef.kind == "measure" else ():
                    for form in forms:
                        key = norm_phrase(form)
                        if key:
                            self.units.setdefault(key[0], []).append((key, t_name, f_name, unit_id))
        for lst in self.units.values():
            lst.sort(key=lambda u: -len(u[0]))

    def fuzzy(self, word: str, raw: str | None = None) -> str | None:
        """Closest phrase word for a misspelling, or None (cached per lexicon).

        ``word`` is the normalised form; ``raw`` (the word as typed) is tried too without a
        plural "s", since the stemmer can mangle a misspelt plural ("olies" -> "oly").
        """
        key = (word, raw)
        if key in self._fuzzy_cache:
            return self._fuzzy_cache[key]
        best = None
        forms = [word]
        if raw and raw.endswith("s") and raw[:-1] != word:
            forms.append(raw[:-1].replace("'", ""))
        for form in forms:
            best = self._closest(form)
            if best is not None:
                break
        if len(self._fuzzy_cache) < 50_000:
            self._fuzzy_cache[key] = best
        return best

    def _closest(self, word: str) -> str | None:
        if len(word) < 4 or not word.isalpha():
            return None
        cutoff = 86 if len(word) <= 5 else 80
        hit = process.extractOne(word, self.vocab, scorer=fuzz.ratio, score_cutoff=cutoff)
        if hit is not None:
            return hit[0]
        # two swapped neighbours ("pespi", "onoin") cost too much for the ratio on short words
        for candidate in self._anagrams.get("".join(sorted(word)), ()):
            if OSA.distance(word, candidate) == 1:
                return candidate
        return None

    def match(self, norms: list[str], i: int) -> tuple[int, Entry] | None:
        for key, entry in self.index.get(norms[i], ()):
            n = len(key)
            if tuple(norms[i:i + n]) == key:
                return n, entry
        return None

    def _measure(self, norms: list[str], i: int) -> tuple[int, tuple[Sense, ...]] | None:
        """ "12 oz" when the menu lists no such amount: a measure value (validated later against the menu)."""
        for key, t_name, f_name, unit_id in self.units.get(norms[i + 1] if i + 1 < len(norms) else "", ()):
            if tuple(norms[i + 1:i + 1 + len(key)]) == key:
                value = f"{fmt_number(float(norms[i]))} {unit_id}"
                return 1 + len(key), (Sense(t_name, f_name, value),)
        return None

    def chunk(self, tokens: list[Token]) -> list[Chunk]:
        norms = [t.raw if t.raw in self.raw_keep else t.norm for t in tokens]
        fixed_at: set[int] = set()
        for i, w in enumerate(norms):  # misspellings first, so that multi-word phrases match ("bbq chiken")
            if w not in self.known and w not in self.fillers and w not in ".," and not NUMBER_RE.fullmatch(w):
                fixed = self.fuzzy(w, tokens[i].raw)
                if fixed is not None:
                    norms[i] = fixed
                    fixed_at.add(i)
        out: list[Chunk] = []
        i = 0
        while i < len(norms):
            w = norms[i]
            hit = self.match(norms, i)
            if hit is None and NUMBER_RE.fullmatch(w):
                measure = self._measure(norms, i)
                if measure is not None:
                    n, senses = measure
                    out.append(Chunk("menu", i, i + n, senses, None, " ".join(t.raw for t in tokens[i:i + n])))
                    i += n
                    continue
            if hit is not None and w in gw.MODALS and (i == 0 or norms[i + 1:i + 2] and norms[i + 1] in gw.PRONOUNS):
                hit = None  # "can i get...": a modal verb, not a container
                out.append(Chunk("filler", i, i + 1, (), None, tokens[i].raw))
                i += 1
                continue
            if hit is not None:
                n, entry = hit
                text = " ".join(t.raw for t in tokens[i:i + n])
                fuzzy = sum(j in fixed_at for j in range(i, i + n)) if fixed_at else 0
                out.append(Chunk(entry.kind, i, i + n, entry.senses, entry.payload, text, fuzzy))
                i += n
                continue
            raw = tokens[i].raw
            if w == ".":
                out.append(Chunk("boundary", i, i + 1, (), None, raw))
            elif w == ",":
                out.append(Chunk("filler", i, i + 1, (), None, raw))
            elif NUMBER_RE.fullmatch(w) or w in ("a", "an"):
                article = w in ("a", "an")
                out.append(Chunk("num", i, i + 1, (), 1.0 if article else float(w), raw))
            elif w in self.fillers:
                out.append(Chunk("filler", i, i + 1, (), None, raw))
            else:
                out.append(Chunk("unknown", i, i + 1, (), None, raw))
            i += 1
        return _split_removals(out, norms)


# chunks that may stand between a split removal's verb and its particle ("take the ham and olives off")
_SPLIT_OBJECT = frozenset({"def", "menu", "and", "or", "qual"})


def _split_removals(chunks: list[Chunk], norms: list[str]) -> list[Chunk]:
    """ "take the olives off": the verb becomes a ``cancel`` word (as "take off the olives") when menu words and
    then one of its particles (``grammar_words.SPLIT_REMOVALS``) follow it; the particle is a filler."""
    for i, ch in enumerate(chunks):
        particles = gw.SPLIT_REMOVALS.get(norms[ch.start]) if ch.kind in ("filler", "unknown") else None
        if not particles:
            continue
        seen_menu = False
        for k in range(i + 1, len(chunks)):
            nxt = chunks[k]
            word = norms[nxt.start] if nxt.end - nxt.start == 1 else ""
            if nxt.kind == "filler" and word in particles:
                if seen_menu:
                    chunks[i] = ch._replace(kind="cancel")
                    # the particle ends what is taken off: "take the ham off and give me olives"
                    chunks[k] = nxt._replace(kind="boundary")
                break
            # only the object between them: "take the plain bagel and get the bacon off" is an order, then a
            # removal ("i'll", "get" end the object)
            if nxt.kind not in _SPLIT_OBJECT:
                break
            seen_menu = seen_menu or nxt.kind == "menu"
    return chunks


def _field_phrases(fdef: Any) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if fdef.kind == "bool":
        out += [(w, True) for w in fdef.true_words] + [(w, False) for w in fdef.false_words]
    elif fdef.kind == "measure":
        for v in fdef.values:
            amount, unit = v.id.split(" ", 1)
            out += [(f"{amount} {form}", v.id) for form in fdef.units.get(unit, [])]
    for v in fdef.values:
        if fdef.kind != "measure":
            out += [(v.display, v.id)] + [(s, v.id) for s in v.synonyms]
        else:
            out += [(s, v.id) for s in v.synonyms]
    return out


FILLERS = frozenset(norm_word(w) for w in gw.FILLER_WORDS)

_CACHE: dict[int, tuple[Menu, Lexicon]] = {}


def get_lexicon(menu: Menu) -> Lexicon:
    """The compiled lexicon of ``menu`` (built once per menu object)."""
    hit = _CACHE.get(id(menu))
    if hit is not None and hit[0] is menu:
        return hit[1]
    if len(_CACHE) > 32:
        _CACHE.clear()
    lex = Lexicon(menu)
    _CACHE[id(menu)] = (menu, lex)
    return lex
