"""The order's resource files are named by a language code only: a model's tag is never a path."""

from __future__ import annotations

import json

from mojodex_core.languages import language_code
from mojodex_core.order.conversation import resources
from mojodex_core.order.conversation.resources import RESPONSES_DIR, keywords, responses, supported_language


def _escape(tmp_path) -> str:  # noqa: ANN001
    """A "language" naming tmp_path/leak.json from the responses folder."""
    return "/".join([".."] * len(RESPONSES_DIR.parts)) + str(tmp_path / "leak")


def test_language_codes():
    assert [language_code(v) for v in ("en", "FR", " pt-br ", "fr-CA")] == ["en", "fr", "pt-BR", "fr-CA"]
    assert [language_code(v) for v in (None, "", "eng", "en_US", "../en", "en-")] == [None] * 6


def test_a_language_that_is_not_a_code_reads_english(tmp_path):
    english = json.loads((RESPONSES_DIR / "en.json").read_text())
    (tmp_path / "leak.json").write_text(json.dumps(dict.fromkeys(english, "LEAKED")))
    resources._raw_intents.cache_clear()
    assert responses(_escape(tmp_path)) == english
    assert keywords(_escape(tmp_path)) == keywords("en")


def test_the_supported_language_has_responses():
    assert [supported_language(v) for v in ("fr", "fr-CA", "FR", "en-GB")] == ["fr", "fr", "fr", "en"]
    assert [supported_language(v) for v in ("de", "../fr", None)] == [None, None, None]
