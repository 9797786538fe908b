"""The steps library: one class per step, registered by its ``name_for_system``, one file per step.

A workflow spec names its steps; each name must be registered here (checked when the spec is
stored). A step is ``execute(parameter, learned_instructions, initial_inputs,
past_validated_results, context) -> list[dict]``: the next step runs once per dict returned
(fan-out). Steps are plain code: they reach the LLM, the uploaded files and the transcription
service only through ``context`` (see ``mojodex_core.workflow.context``).
"""

from __future__ import annotations

import importlib
import pkgutil
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from mojodex_core.workflow.context import StepContext

__all__ = ["Step", "StepError", "get_step", "register", "step_names"]

_REGISTRY: dict[str, type[Step]] = {}


class StepError(Exception):
    """A step that cannot produce its result; the message is shown to the user."""


class Step(ABC):
    name_for_system: ClassVar[str]

    @abstractmethod
    def execute(
        self,
        parameter: dict[str, Any],
        learned_instructions: list[str],
        initial_inputs: dict[str, Any],
        past_validated_results: list[dict[str, Any]],
        context: StepContext,
    ) -> list[dict[str, Any]]:
        """The step's result: one dict per run of the next step."""


def register(cls: type[Step]) -> type[Step]:
    name = cls.name_for_system
    if name in _REGISTRY and _REGISTRY[name] is not cls:
        raise ValueError(f"two steps are named {name!r}")
    _REGISTRY[name] = cls
    return cls


def _load_all() -> None:
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


def get_step(name: str) -> Step:
    _load_all()
    cls = _REGISTRY.get(name)
    if cls is None:
        raise KeyError(f"no step named {name!r} in the steps library (known: {', '.join(step_names())})")
    return cls()


def step_names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)
