"""What a step may use besides its arguments: the LLM, the files sent with the form, transcription.

Small Protocols, so a step can run in a unit test with fakes and on the platform with the real
provider, database and transcription endpoint.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, TypeVar

from pydantic import BaseModel

T = TypeVar("T", bound=BaseModel)

LEARNED_INSTRUCTIONS_TITLE = "Instructions the user gave you on earlier runs of this step (follow them):"


@dataclass(frozen=True)
class UploadedFile:
    filename: str
    content_type: str | None
    data: bytes


class StepLLM(Protocol):
    def chat(self, messages: list[dict[str, str]], *, label: str) -> str: ...

    def structured(self, messages: list[dict[str, str]], model: type[T], *, label: str) -> T: ...


class Transcriber(Protocol):
    def transcribe(self, file: UploadedFile) -> str: ...


@dataclass
class StepContext:
    user_task_execution_pk: int
    step_name: str
    step_definition: str
    task_definition: str
    username: str
    language: str
    llm: StepLLM | None
    files: Callable[[str], UploadedFile | None]
    transcriber: Transcriber | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    # Reasoning or notes a step wants in the execution's reasoning trace ("[DIRECT] ...").
    trace: list[str] = field(default_factory=list)

    def require_llm(self) -> StepLLM:
        from mojodex_core.workflow.steps import StepError

        if self.llm is None:
            raise StepError("No LLM configured: this step needs one (set MOJODEX_LLM_BASE_URL or OPENAI_API_KEY).")
        return self.llm

    def system_prompt(self, instructions: str, learned_instructions: list[str]) -> str:
        """The common head of a step's system prompt, with the user's learned instructions."""
        lines = [
            f"You are the assistant of {self.username}, running one step of a workflow.",
            f"The workflow: {self.task_definition}",
            f"This step ({self.step_name}): {self.step_definition}",
            f"Write in the language of this code: {self.language}.",
            "",
            instructions.strip(),
        ]
        if learned_instructions:
            lines += ["", LEARNED_INSTRUCTIONS_TITLE] + [f"- {i}" for i in learned_instructions]
        return "\n".join(lines)


def inputs_text(initial_inputs: dict[str, Any]) -> str:
    return "\n".join(f"{name}: {value}" for name, value in initial_inputs.items() if value not in (None, ""))
