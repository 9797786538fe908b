"""The workflow engine as a function of data: given the steps and the live step executions, what next.

Steps run in rank order. Rank 1 runs once, on the initial inputs; rank r runs once per item of the
results of rank r-1, in order (fan-out). A run must end and be validated (by the user when its step
requires it, at once otherwise) before the next one starts: one step at a time per execution.
Nothing here touches the database; ``mojodex_core.workflow.store`` loads the rows and applies
the decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FIRST_SLOT = "0:0"


@dataclass(frozen=True)
class StepDef:
    name: str
    rank: int
    definition: str
    user_validation_required: bool
    review_chat_enabled: bool


@dataclass(frozen=True)
class StepRun:
    """A live step execution (not lapsed, not invalidated) with its current result."""

    pk: int
    rank: int
    slot: str
    parent_pk: int | None
    item_index: int
    status: str  # running | done | failed
    validated: bool | None
    parameter: dict[str, Any]
    result: list[dict[str, Any]] | None


@dataclass(frozen=True)
class RunStep:
    step: StepDef
    slot: str
    parent_pk: int | None
    item_index: int
    parameter: dict[str, Any]


@dataclass(frozen=True)
class Waiting:
    """Nothing to run now: ``why`` is running, validation, review or failed (the blocking row's pk)."""

    why: str
    pk: int


@dataclass(frozen=True)
class Complete:
    """Every step ran and was validated: the last rank's runs, in order, make the result."""

    last_runs: tuple[StepRun, ...]


Action = RunStep | Waiting | Complete


def steps_from_spec(spec: dict[str, Any]) -> list[StepDef]:
    steps = [
        StepDef(
            name=s["name_for_system"],
            rank=s.get("rank") or i + 1,
            definition=s.get("definition_for_system", ""),
            user_validation_required=bool(s.get("user_validation_required", True)),
            review_chat_enabled=bool(s.get("review_chat_enabled", False)),
        )
        for i, s in enumerate(spec.get("steps") or [])
    ]
    return sorted(steps, key=lambda s: s.rank)


def slot_of(parent_pk: int | None, item_index: int) -> str:
    return f"{parent_pk or 0}:{item_index}"


def _ordered(runs: list[StepRun]) -> list[StepRun]:
    """Runs of the previous rank in result order: parents' order first, then item index."""
    by_rank: dict[int, list[StepRun]] = {}
    for run in runs:
        by_rank.setdefault(run.rank, []).append(run)
    order: dict[int, tuple[int, ...]] = {}
    ordered: list[StepRun] = []
    for rank in sorted(by_rank):
        rows = sorted(by_rank[rank], key=lambda r: (order.get(r.parent_pk or 0, ()), r.item_index))
        for position, row in enumerate(rows):
            order[row.pk] = (*order.get(row.parent_pk or 0, ()), position)
        ordered += rows
    return ordered


def next_action(steps: list[StepDef], runs: list[StepRun], initial_inputs: dict[str, Any]) -> Action:
    runs = _ordered(runs)
    previous: list[StepRun] = []
    for index, step in enumerate(steps):
        if index == 0:
            wanted = [(None, 0, dict(initial_inputs))]
        else:
            wanted = [(p.pk, i, item) for p in previous for i, item in enumerate(p.result or [])]
        live = {r.slot: r for r in runs if r.rank == step.rank}
        current: list[StepRun] = []
        for parent_pk, item_index, parameter in wanted:
            slot = slot_of(parent_pk, item_index)
            run = live.get(slot)
            if run is None:
                return RunStep(step, slot, parent_pk, item_index, parameter if isinstance(parameter, dict) else {
                    "value": parameter})
            if run.status == "running":
                return Waiting("running", run.pk)
            if run.status == "failed":
                return Waiting("failed", run.pk)
            if run.validated is None:
                return Waiting("validation", run.pk)
            if run.validated is False:
                return Waiting("review", run.pk)
            current.append(run)
        previous = current
        if not previous:  # no item to run on (the runner fails a step returning none, an edit cannot store one)
            return Complete(())
    return Complete(tuple(previous))


def ancestors(run_pk: int | None, runs: list[StepRun]) -> list[StepRun]:
    """The chain of runs that led to a parameter, rank 1 first."""
    by_pk = {r.pk: r for r in runs}
    chain: list[StepRun] = []
    while run_pk is not None and run_pk in by_pk:
        run = by_pk[run_pk]
        chain.append(run)
        run_pk = run.parent_pk
    return list(reversed(chain))


def later_runs(runs: list[StepRun], rank: int) -> list[StepRun]:
    return [r for r in runs if r.rank > rank]


def final_text(last_runs: tuple[StepRun, ...], default_title: str) -> tuple[str, str]:
    """(title, body) of the produced text: the last step's results, one item after the other.

    A markdown heading on the first line of the body becomes the title."""
    parts: list[str] = []
    for run in last_runs:
        for item in run.result or []:
            values = item.values() if isinstance(item, dict) else [item]
            parts += [str(v).strip() for v in values if isinstance(v, (str, int, float)) and str(v).strip()]
    body = "\n\n".join(parts)
    title = default_title
    first, _, rest = body.partition("\n")
    if first.startswith("# "):
        title, body = first[2:].strip() or default_title, rest.strip()
    return title, body
