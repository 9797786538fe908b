"""Language codes: the ISO 639-1 list, the one place that says whether a code names a language.

The 184 two-letter codes of ISO 639-1, copied from Debian's iso-codes 4.15.0
(``/usr/share/iso-codes/json/iso_639-2.json``, the entries with an ``alpha_2``): a list that
changes once in years does not justify a dependency. A code may carry a region
(``pt-BR``): only its language part is checked against the list.
"""

from __future__ import annotations

import re
from pathlib import Path

ISO_639_1: frozenset[str] = frozenset("""
    aa ab ae af ak am an ar as av ay az ba be bg bh bi bm bn bo br bs ca ce ch co cr cs cu cv cy da
    de dv dz ee el en eo es et eu fa ff fi fj fo fr fy ga gd gl gn gu gv ha he hi ho hr ht hu hy hz
    ia id ie ig ii ik io is it iu ja jv ka kg ki kj kk kl km kn ko kr ks ku kv kw ky la lb lg li ln
    lo lt lu lv mg mh mi mk ml mn mr ms mt my na nb nd ne ng nl nn no nr nv ny oc oj om or os pa pi
    pl ps pt qu rm rn ro ru rw sa sc sd se sg si sk sl sm sn so sq sr ss st su sv sw ta te tg th ti
    tk tl tn to tr ts tt tw ty ug uk ur uz ve vi vo wa wo xh yi yo za zh zu
""".split())


def unknown_language(code: str) -> str | None:
    """Why ``code`` (``xx`` or ``xx-YY``, already matched against the pattern) names no language,
    or None when its language part is an ISO 639-1 code."""
    language = code.split("-", 1)[0].lower()
    if language in ISO_639_1:
        return None
    return f"unknown language code {language!r} (an ISO 639-1 code like 'en' or 'fr')"


_CODE = re.compile(r"([a-z]{2})(?:-([a-z]{2}))?", re.IGNORECASE)


def language_code(value: str | None) -> str | None:
    """``value`` as a language code (``xx`` or ``xx-YY``), None when it is not one: what names a
    resource file (``<code>.json``) must be such a code, never a path a model or a client wrote."""
    match = _CODE.fullmatch((value or "").strip())
    if match is None:
        return None
    language, region = match.groups()
    return f"{language.lower()}-{region.upper()}" if region else language.lower()


def language_file(folder: Path, language: str | None) -> Path | None:
    """``folder``'s ``<code>.json`` of ``language`` when it is a language code and the file exists, else None.
    The one way a language names a resource file: a model's tag or a client's value is never a path."""
    code = language_code(language)
    path = folder / f"{code}.json" if code is not None else None
    return path if path is not None and path.is_file() else None
