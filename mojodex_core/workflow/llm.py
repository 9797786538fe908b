"""The platform's LLM provider seen by steps: text in, text (or a validated model) out."""

from __future__ import annotations

import threading

from mojodex_core.llm import LLMProvider
from mojodex_core.workflow.context import T


class ProviderStepLLM:
    def __init__(self, llm: LLMProvider, user_task_execution_pk: int, cancel: threading.Event) -> None:
        self._llm = llm
        self._pk = user_task_execution_pk
        self._cancel = cancel

    def chat(self, messages: list[dict[str, str]], *, label: str) -> str:
        return self._llm.chat(messages, label=label, user_task_execution_pk=self._pk, cancel=self._cancel).text

    def structured(self, messages: list[dict[str, str]], model: type[T], *, label: str) -> T:
        return self._llm.structured(messages, model, label=label, user_task_execution_pk=self._pk,
                                    cancel=self._cancel)
