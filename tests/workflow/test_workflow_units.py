"""The engine, the transcript readers and the steps library as functions of data (no server)."""

from __future__ import annotations

import pytest

from mojodex_core.workflow.context import LEARNED_INSTRUCTIONS_TITLE, StepContext, UploadedFile
from mojodex_core.workflow.engine import (
    Complete,
    RunStep,
    StepDef,
    StepRun,
    Waiting,
    final_text,
    next_action,
    steps_from_spec,
)
from mojodex_core.workflow.steps import StepError, get_step, step_names
from mojodex_core.workflow.transcription import NO_TRANSCRIBER, subtitle_text, transcript_text

STEPS = [StepDef("divide", 1, "", True, True), StepDef("write", 2, "", False, False)]


def run(pk, rank, slot, status="done", validated=True, result=None, parent=None, index=0):  # noqa: ANN001, ANN201
    return StepRun(pk, rank, slot, parent, index, status, validated, {}, result)


def test_rank_1_runs_first_on_the_initial_inputs():
    action = next_action(STEPS, [], {"topic": "sea"})
    assert isinstance(action, RunStep) and action.step.rank == 1 and action.parameter == {"topic": "sea"}
    assert action.slot == "0:0" and action.parent_pk is None


def test_a_step_awaiting_validation_blocks_the_next_rank():
    assert next_action(STEPS, [run(1, 1, "0:0", validated=None, result=[{"t": 1}])], {}) == Waiting("validation", 1)
    assert next_action(STEPS, [run(1, 1, "0:0", validated=False, result=[{"t": 1}])], {}) == Waiting("review", 1)
    assert next_action(STEPS, [run(1, 1, "0:0", status="running", validated=None)], {}) == Waiting("running", 1)
    assert next_action(STEPS, [run(1, 1, "0:0", status="failed", validated=None)], {}) == Waiting("failed", 1)


def test_fan_out_runs_the_next_step_once_per_item_in_order():
    divider = run(1, 1, "0:0", result=[{"t": "a"}, {"t": "b"}, {"t": "c"}])
    first = next_action(STEPS, [divider], {})
    assert isinstance(first, RunStep) and (first.slot, first.parameter) == ("1:0", {"t": "a"})
    runs = [divider, run(2, 2, "1:0", parent=1, result=[{"s": "A"}])]
    second = next_action(STEPS, runs, {})
    assert isinstance(second, RunStep) and (second.slot, second.parameter, second.item_index) == ("1:1", {"t": "b"}, 1)
    runs += [run(3, 2, "1:1", parent=1, index=1, result=[{"s": "B"}]),
             run(4, 2, "1:2", parent=1, index=2, result=[{"s": "C"}])]
    done = next_action(STEPS, runs, {})
    assert isinstance(done, Complete) and [r.pk for r in done.last_runs] == [2, 3, 4]
    assert final_text(done.last_runs, "Poem") == ("Poem", "A\n\nB\n\nC")


def test_an_empty_result_ends_the_workflow_with_nothing_to_produce():
    assert next_action(STEPS, [run(1, 1, "0:0", result=[])], {}) == Complete(())


def test_a_heading_becomes_the_title_and_ranks_come_from_the_spec():
    assert final_text((run(1, 1, "0:0", result=[{"document": "# Guide\n\nBody"}]),), "x") == ("Guide", "Body")
    spec = {"steps": [{"name_for_system": "b", "rank": 2}, {"name_for_system": "a", "rank": 1,
                                                             "user_validation_required": False}]}
    assert [(s.name, s.user_validation_required) for s in steps_from_spec(spec)] == [("a", False), ("b", True)]


def test_subtitles_keep_the_words_only():
    srt = "1\n00:00:01,000 --> 00:00:02,500\nHello there.\n\n2\n00:00:02,500 --> 00:00:04,000\nHello there.\nBye.\n"
    assert subtitle_text(srt) == "Hello there.\nBye."
    vtt = ("WEBVTT\nKind: captions\n\nNOTE a comment\nstill the note\n\n"
           "00:01.000 --> 00:02.000 align:start\n<v Bo>Hi</v>\n")
    assert subtitle_text(vtt) == "Hi"
    assert transcript_text(UploadedFile("t.txt", None, "\ufeffPlain words \n".encode())) == "Plain words"


def _context(files, transcriber=None, llm=None) -> StepContext:  # noqa: ANN001
    return StepContext(1, "transcribe_recording", "", "", "Ana", "en", llm, files.get, transcriber)


def test_transcribe_recording_needs_a_transcriber_for_audio_and_says_so():
    step = get_step("transcribe_recording")
    audio = {"video_recording": UploadedFile("talk.mp4", "video/mp4", b"\x00\x01")}
    with pytest.raises(StepError) as error:
        step.execute({"video_recording": "talk.mp4"}, [], {"video_recording": "talk.mp4"}, [], _context(audio))
    assert str(error.value) == NO_TRANSCRIBER and "MOJODEX_TRANSCRIPTION_BASE_URL" in NO_TRANSCRIBER

    class Fake:
        def transcribe(self, file: UploadedFile) -> str:
            return f"words of {file.filename}"

    result = step.execute({"video_recording": "talk.mp4"}, [], {}, [], _context(audio, Fake()))
    assert result == [{"transcription": "words of talk.mp4"}]
    with pytest.raises(StepError, match="No recording"):
        step.execute({"video_recording": "x"}, [], {}, [], _context({}))


def test_the_library_holds_the_shipped_steps_and_prompts_carry_learned_instructions():
    assert {"stanza_divider", "stanza_writer", "transcribe_recording", "transcription_to_chapters",
            "chapters_to_doc"} <= set(step_names())
    with pytest.raises(KeyError, match="no step named"):
        get_step("nope")
    prompt = _context({}).system_prompt("Do it.", ["Be brief"])
    assert LEARNED_INSTRUCTIONS_TITLE in prompt and prompt.endswith("- Be brief")
    with pytest.raises(StepError, match="No LLM configured"):
        get_step("stanza_writer").execute({"stanza_topic": "a"}, [], {}, [], _context({}))
