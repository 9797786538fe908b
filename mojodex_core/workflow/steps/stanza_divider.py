"""write_poem, rank 1: divide the poem's topic into one topic per stanza (the fan-out)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from mojodex_core.workflow.context import StepContext, inputs_text
from mojodex_core.workflow.steps import NonEmptyText, ResultItem, Step, StepError, register

MAX_STANZAS = 12


class StanzaTopics(BaseModel):
    stanza_topics: list[str] = Field(description="One short topic per stanza, in order.")


class StanzaTopicItem(ResultItem):
    """One stanza's topic."""

    stanza_topic: NonEmptyText


@register
class StanzaDivider(Step):
    name_for_system = "stanza_divider"
    result_item = StanzaTopicItem

    def execute(self, parameter: dict[str, Any], learned_instructions: list[str], initial_inputs: dict[str, Any],
                past_validated_results: list[dict[str, Any]], context: StepContext) -> list[dict[str, Any]]:
        system = context.system_prompt(
            "Divide the poem the user asks for into stanzas: give one short topic per stanza, in order "
            f"(2 to {MAX_STANZAS} stanzas unless the user asks otherwise). "
            'Answer with JSON: {"stanza_topics": ["...", "..."]}.',
            learned_instructions,
        )
        user = inputs_text(parameter or initial_inputs)
        answer = context.require_llm().structured(
            [{"role": "system", "content": system}, {"role": "user", "content": user}], StanzaTopics,
            label="WORKFLOW_STANZA_DIVIDER",
        )
        topics = [t.strip() for t in answer.stanza_topics if t and t.strip()][:MAX_STANZAS]
        if not topics:
            raise StepError("The assistant gave no stanza topic. Please relaunch the step.")
        return [{"stanza_topic": topic} for topic in topics]
