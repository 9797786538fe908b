"""doc_gen_workflow, rank 3: the document, written from the transcription along the chapters outline."""

from __future__ import annotations

from typing import Any

from mojodex_core.workflow.context import StepContext
from mojodex_core.workflow.steps import NonEmptyText, ResultItem, Step, StepError, register
from mojodex_core.workflow.steps.transcription_to_chapters import transcription_of


class DocumentItem(ResultItem):
    """The written document."""

    document: NonEmptyText


@register
class ChaptersToDoc(Step):
    name_for_system = "chapters_to_doc"
    result_item = DocumentItem

    def execute(self, parameter: dict[str, Any], learned_instructions: list[str], initial_inputs: dict[str, Any],
                past_validated_results: list[dict[str, Any]], context: StepContext) -> list[dict[str, Any]]:
        chapters = str(parameter.get("chapters") or "").strip()
        if not chapters:
            raise StepError("There is no chapters outline to follow: edit or relaunch the chapters step.")
        transcription = transcription_of(past_validated_results, {})
        system = context.system_prompt(
            "Write a document from the transcription of a recording, following the chapters outline: one "
            "section per chapter, in order. Start with the document's title on the first line, prefixed "
            "with '# '. Answer with the document only.",
            learned_instructions,
        )
        document = context.require_llm().chat(
            [
                {"role": "system", "content": system},
                {"role": "user", "content": f"Chapters outline:\n{chapters}\n\nTranscription:\n{transcription}"},
            ],
            label="WORKFLOW_DOCUMENT",
        ).strip()
        if not document:
            raise StepError("The assistant returned an empty document. Please relaunch the step.")
        return [{"document": document}]
