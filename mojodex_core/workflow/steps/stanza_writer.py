"""write_poem, rank 2: write one stanza on one topic (runs once per topic of the divider)."""

from __future__ import annotations

from typing import Any

from mojodex_core.workflow.context import StepContext, inputs_text
from mojodex_core.workflow.steps import NonEmptyText, ResultItem, Step, StepError, register


class StanzaItem(ResultItem):
    """One written stanza."""

    stanza: NonEmptyText


@register
class StanzaWriter(Step):
    name_for_system = "stanza_writer"
    result_item = StanzaItem

    def execute(self, parameter: dict[str, Any], learned_instructions: list[str], initial_inputs: dict[str, Any],
                past_validated_results: list[dict[str, Any]], context: StepContext) -> list[dict[str, Any]]:
        topic = str(parameter.get("stanza_topic") or "").strip()
        if not topic:
            raise StepError("This stanza has no topic: edit the divider's result to give it one.")
        system = context.system_prompt(
            "Write one stanza of a poem (4 to 6 lines) on the topic the user gives. "
            "Answer with the stanza only: no title, no comment.",
            learned_instructions,
        )
        user = f"The poem: {inputs_text(initial_inputs)}\nThis stanza's topic: {topic}"
        stanza = context.require_llm().chat(
            [{"role": "system", "content": system}, {"role": "user", "content": user}], label="WORKFLOW_STANZA_WRITER"
        ).strip()
        if not stanza:
            raise StepError("The assistant returned an empty stanza. Please relaunch the step.")
        return [{"stanza": stanza}]
