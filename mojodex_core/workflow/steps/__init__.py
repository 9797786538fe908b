"""The steps library: one class per step, registered by its ``name_for_system``, one file per step.

A workflow spec names its steps; each name must be registered here (checked when the spec is
stored). A step is ``execute(parameter, learned_instructions, initial_inputs,
past_validated_results, context) -> list[dict]``: the next step runs once per dict returned
(fan-out). A step declares the shape of one item of its result (``result_item``, a pydantic
model); a result the user edits is checked against it (``check_result``) before it is stored,
so the next step never runs on keys it does not know. Steps are plain code: they reach the LLM,
the uploaded files and the transcription service only through ``context`` (see
``mojodex_core.workflow.context``).
"""

from __future__ import annotations

import importlib
import pkgutil
from abc import ABC, abstractmethod
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, ConfigDict, StringConstraints, ValidationError

from mojodex_core.workflow.context import StepContext

__all__ = ["NonEmptyText", "ResultItem", "ResultShapeError", "Step", "StepError", "get_step", "register",
           "step_names"]

NonEmptyText = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]

_REGISTRY: dict[str, type[Step]] = {}


class StepError(Exception):
    """A step that cannot produce its result; the message is shown to the user."""


class ResultShapeError(ValueError):
    """An edited result that does not have the step's declared shape (a 400); the message names it."""


class ResultItem(BaseModel):
    """One item of a step's result: the declared keys, no other."""

    model_config = ConfigDict(extra="forbid", strict=True)


def _problem(index: int, error: dict[str, Any], expected: list[str]) -> str:
    where = ".".join(str(part) for part in (f"result[{index}]", *error["loc"]))
    kind = error["type"]
    if kind == "missing":
        return f"{where}: is required"
    if kind == "extra_forbidden":
        return f"{where}: unknown key (expected: {', '.join(expected)})"
    if kind == "string_too_short":
        return f"{where}: must not be empty"
    return f"{where}: {error['msg'][:1].lower()}{error['msg'][1:]}"


class Step(ABC):
    name_for_system: ClassVar[str]
    # The shape of one item of the result; None: any object (no check of an edited result).
    result_item: ClassVar[type[ResultItem] | None] = None

    def check_result(self, result: list[dict[str, Any]]) -> None:
        """Raises ResultShapeError naming every problem of an edited result (checked against ``result_item``)."""
        if self.result_item is None:
            return
        expected = list(self.result_item.model_fields)
        problems: list[str] = []
        for index, item in enumerate(result):
            try:
                self.result_item.model_validate(item)
            except ValidationError as exc:
                problems += [_problem(index, error, expected) for error in exc.errors()]
        if problems:
            raise ResultShapeError(f"result does not fit step {self.name_for_system!r}: " + "; ".join(problems[:5]))

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
