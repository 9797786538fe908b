"""What the home chat says itself, not the model: texts of ``tasks_config/home_chat/<language>.json``.

A language with no file, or a key missing from its file, falls back to ``en``; ``pt-BR`` reads
``pt-BR.json``, else ``pt.json``. What is not a language code (``xx``, ``xx-YY``) reads ``en``.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from mojodex_core.config import PROJECT_ROOT
from mojodex_core.languages import language_code, language_file

REPLIES_DIR = "home_chat"
FALLBACK = "en"


@lru_cache(maxsize=32)
def _table(tasks_config_dir: Path, language: str) -> dict[str, str]:
    folder = tasks_config_dir / REPLIES_DIR
    table = json.loads((folder / f"{FALLBACK}.json").read_text(encoding="utf-8"))
    for name in dict.fromkeys([language.split("-")[0], language]):  # the base language, then the regional one
        path = language_file(folder, name) if name != FALLBACK else None
        if path is not None:
            table = table | json.loads(path.read_text(encoding="utf-8"))
    return table


def home_chat_reply(language: str | None, key: str, *, tasks_config_dir: Path | None = None, **values: str) -> str:
    """The text of ``key`` in ``language``, its ``{placeholders}`` filled with ``values``."""
    table = _table(tasks_config_dir or PROJECT_ROOT / "tasks_config", language_code(language) or FALLBACK)
    return table[key].format(**values)
