"""doc_gen_workflow, rank 1: the recording as text (an uploaded transcript, or audio transcribed)."""

from __future__ import annotations

from typing import Any

from mojodex_core.workflow.context import StepContext
from mojodex_core.workflow.steps import NonEmptyText, ResultItem, Step, StepError, register
from mojodex_core.workflow.transcription import NO_TRANSCRIBER, is_transcript, transcript_text

MAX_TRANSCRIPT_CHARS = 200_000


class TranscriptionItem(ResultItem):
    """The recording's transcription."""

    transcription: NonEmptyText


@register
class TranscribeRecording(Step):
    name_for_system = "transcribe_recording"
    result_item = TranscriptionItem

    def execute(self, parameter: dict[str, Any], learned_instructions: list[str], initial_inputs: dict[str, Any],
                past_validated_results: list[dict[str, Any]], context: StepContext) -> list[dict[str, Any]]:
        # The spec's only input is the recording; its name is whatever the spec calls it.
        names = [n for n in (parameter or initial_inputs) if context.files(n) is not None]
        if not names:
            raise StepError("No recording was sent with this task: upload the video, audio or a transcript "
                            "(.txt, .vtt, .srt) as the form's file input.")
        file = context.files(names[0])
        assert file is not None
        if is_transcript(file.filename):
            text = transcript_text(file)
        elif context.transcriber is None:
            raise StepError(NO_TRANSCRIBER)
        else:
            text = context.transcriber.transcribe(file)
        if not text.strip():
            raise StepError(f"The file {file.filename!r} holds no words to work from.")
        return [{"transcription": text[:MAX_TRANSCRIPT_CHARS]}]
