"""doc_gen_workflow, rank 2: a chapters outline of the transcription (the user validates it)."""

from __future__ import annotations

from typing import Any

from mojodex_core.workflow.context import StepContext
from mojodex_core.workflow.steps import NonEmptyText, ResultItem, Step, StepError, register


def transcription_of(past_validated_results: list[dict[str, Any]], parameter: dict[str, Any]) -> str:
    if parameter.get("transcription"):
        return str(parameter["transcription"])
    for past in past_validated_results:
        for item in past.get("result") or []:
            if isinstance(item, dict) and item.get("transcription"):
                return str(item["transcription"])
    raise StepError("There is no transcription to work from: relaunch the transcription step.")


class ChaptersItem(ResultItem):
    """The chapters' outline."""

    chapters: NonEmptyText


@register
class TranscriptionToChapters(Step):
    name_for_system = "transcription_to_chapters"
    result_item = ChaptersItem

    def execute(self, parameter: dict[str, Any], learned_instructions: list[str], initial_inputs: dict[str, Any],
                past_validated_results: list[dict[str, Any]], context: StepContext) -> list[dict[str, Any]]:
        transcription = transcription_of(past_validated_results, parameter)
        system = context.system_prompt(
            "Read the transcription of a recording and suggest the chapters of a document written from it: "
            "one line per chapter, numbered, each with a title and a one-sentence summary. "
            "Answer with the outline only.",
            learned_instructions,
        )
        outline = context.require_llm().chat(
            [{"role": "system", "content": system}, {"role": "user", "content": f"Transcription:\n{transcription}"}],
            label="WORKFLOW_CHAPTERS",
        ).strip()
        if not outline:
            raise StepError("The assistant returned an empty outline. Please relaunch the step.")
        return [{"chapters": outline}]
