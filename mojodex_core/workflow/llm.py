"""The platform's LLM provider seen by steps: text in, text (or a validated model) out.

Each successful call is a decision of the step: it leaves one reasoning-trace entry (``trace``), written
with the step's end, like every other LLM decision of the platform.
"""

from __future__ import annotations

import threading

from mojodex_core.execution.reasoning import extract_reasoning, trace_entry
from mojodex_core.llm import LLMProvider
from mojodex_core.workflow.context import T


class ProviderStepLLM:
    def __init__(self, llm: LLMProvider, user_task_execution_pk: int, cancel: threading.Event, *,
                 step_name: str = "step", trace: list[tuple[str, str]] | None = None,
                 max_tokens: int | None = None) -> None:
        self._max_tokens = max_tokens
        self._llm = llm
        self._pk = user_task_execution_pk
        self._cancel = cancel
        self._step = step_name
        self.trace: list[tuple[str, str]] = trace if trace is not None else []  # (label, entry)

    def _record(self, label: str, reasoning: str | None, reply: str) -> None:
        entry = trace_entry(reasoning, [], reply)
        kind, _, why = entry.partition(" ")
        self.trace.append((label, f"{kind} {self._step}: {why}"))

    def chat(self, messages: list[dict[str, str]], *, label: str) -> str:
        # Streamed, though nobody sees the tokens: the cancel (a stop, a restart, a deletion) then ends the call
        # at its next chunk, not once the whole answer has come.
        # No token handler: nothing is shown, so the call keeps its retries and waits as long as a whole answer.
        text = self._llm.chat(messages, label=label, stream=True, on_token=None, user_task_execution_pk=self._pk,
                              cancel=self._cancel, max_tokens=self._max_tokens,
                              read_timeout_s=self._llm.settings.timeout_s).text
        reasoning, _ = extract_reasoning(text)
        self._record(label, reasoning, text)
        return text

    def structured(self, messages: list[dict[str, str]], model: type[T], *, label: str) -> T:
        result = self._llm.structured(messages, model, label=label, user_task_execution_pk=self._pk,
                                      cancel=self._cancel, max_tokens=self._max_tokens)
        reasoning = getattr(result, "reasoning", None)
        self._record(label, reasoning if isinstance(reasoning, str) else None, result.model_dump_json())
        return result
