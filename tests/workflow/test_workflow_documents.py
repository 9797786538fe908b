"""doc_gen_workflow inputs: transcripts and subtitles, audio through /audio/transcriptions when configured,
a clear error when not, files refused when they do not fit; the spec must name library steps; the result
chat on the final document."""

from __future__ import annotations

import dataclasses
import hashlib
import json

from mojodex_core.workflow import store
from tests.support.live import REPO_ROOT, serving
from tests.support.scripted_llm import Reply
from tests.workflow._helpers import (
    DOC,
    at_the_divider,
    awaiting,
    poem_user,
    start_doc,
    validate,
    wait_completed,
    wait_steps,
)
from tests.workflow.conftest import load_workflows, workflow_settings

SRT = b"1\n00:00:00,000 --> 00:00:02,000\nFirst we plan.\n\n2\n00:00:02,000 --> 00:00:04,000\nThen we build.\n"


# sha256 of Mojodex's doc_gen_workflow.json (shared/data/mojodex_task_specs): shipped unchanged.
MOJODEX_DOC_GEN_SHA256 = "a7df5110b36436eba642aa1f89822eff06bc887401e66029cc20143cd9f47786"


def test_the_shipped_spec_is_the_mojodex_file_byte_for_byte():
    shipped = (REPO_ROOT / "tasks_config" / "generate_documentation_from_video.json").read_bytes()
    assert hashlib.sha256(shipped).hexdigest() == MOJODEX_DOC_GEN_SHA256


def test_an_srt_transcript_goes_through_to_the_final_document(wf, llm):
    user = poem_user(wf)
    llm.script(Reply("1. Plan\n2. Build"))
    created = start_doc(user, "meeting.srt", SRT)
    pk = created["user_task_execution_pk"]
    rows = wait_steps(user, pk, awaiting(2))
    assert rows[0]["result"] == [{"transcription": "First we plan.\nThen we build."}]
    llm.script(Reply("# Plan and build\n\nWe plan, then we build."))
    validate(user, rows[1]["user_workflow_step_execution_pk"])
    produced = wait_completed(user, pk)
    assert (produced["produced_text_title"], produced["produced_text"]) == ("Plan and build", "We plan, then we build.")
    assert "First we plan." in json.dumps(llm.requests[1]["messages"])  # the document sees the transcription


def test_audio_without_a_transcription_service_fails_the_step_saying_what_to_do(wf, llm):
    user = poem_user(wf)
    created = start_doc(user, "talk.mp3", b"ID3\x00\x00fake audio")
    (failed,) = wait_steps(user, created["user_task_execution_pk"], lambda rs: rs and rs[0]["status"] == "failed")
    assert "no transcription service is configured" in failed["error"]
    assert ".vtt" in failed["error"] and "MOJODEX_TRANSCRIPTION_BASE_URL" in failed["error"]
    assert llm.requests == []


def test_audio_is_transcribed_through_the_configured_endpoint(database_url, llm, workflow_server):
    settings = dataclasses.replace(workflow_settings(database_url, llm.base_url), transcription_base_url=llm.base_url,
                                   transcription_api_key="test", transcription_model="whisper-test")
    with serving(settings, configure=load_workflows) as live:
        user = poem_user(live)
        llm.transcript = "We ship on Friday."
        llm.script(Reply("1. Shipping"))
        created = start_doc(user, "standup.m4a", b"\x00\x00\x00 ftypM4A fake audio bytes")
        rows = wait_steps(user, created["user_task_execution_pk"], awaiting(2))
        assert rows[0]["result"] == [{"transcription": "We ship on Friday."}]
        (upload,) = llm.transcription_uploads
        assert b"fake audio bytes" in upload and b"whisper-test" in upload and b"standup.m4a" in upload
        live.wait_idle()


def test_a_missing_or_misplaced_file_is_a_400_and_nothing_starts(wf, llm):
    user = poem_user(wf)
    created = user.new_execution(DOC)
    pk = created["user_task_execution_pk"]
    response = user.call("POST", "/user_task_execution_run", json={"user_task_execution_pk": pk, "inputs": {}})
    assert response.status_code == 400 and "upload the file" in response.json()["error"]
    response = user.call("POST", "/user_task_execution_run", data={"user_task_execution_pk": pk},
                         files={"not_an_input": ("a.txt", b"x")})
    assert response.status_code == 400 and "not a file input" in response.json()["error"]
    response = user.call("POST", "/user_task_execution_run", data={"user_task_execution_pk": pk},
                         files={"video_recording": ("a.txt", b"")})
    assert response.status_code == 400 and "empty" in response.json()["error"]
    response = user.call("POST", "/user_task_execution_run", data={"user_task_execution_pk": pk, "inputs": "{oops"},
                         files={"video_recording": ("a.txt", b"x")})
    assert response.status_code == 400 and "JSON" in response.json()["error"]
    assert user.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})["status"] == "created"
    assert user.ok("GET", "/user_workflow_step_execution", params={"user_task_execution_pk": pk})[
        "step_executions"] == []


def test_a_file_name_or_content_type_longer_than_stored_is_a_400_and_nothing_starts(wf, llm):
    user = poem_user(wf)
    created = user.new_execution(DOC)
    pk = created["user_task_execution_pk"]
    too_long = [("n" * 252 + ".srt", "application/x-subrip", "file name must be at most 255"),
                ("a.srt", "application/" + "x" * 117, "content type must be at most 128")]
    for filename, content_type, error in too_long:
        for path, data in (("/user_task_execution_run", {"user_task_execution_pk": pk}),
                           ("/restart_user_workflow_execution", {"user_task_execution_pk": pk, "from_rank": 1})):
            response = user.call("POST", path, data=data, files={"video_recording": (filename, SRT, content_type)})
            assert response.status_code == 400, (path, response.status_code, response.text)
            assert error in response.json()["error"]
    assert user.ok("GET", "/user_task_execution", params={"user_task_execution_pk": pk})["status"] == "created"
    with wf.db() as db:
        assert store.uploaded_file(db, pk, "video_recording") is None
    user.ok("POST", "/user_task_execution_run", data={"user_task_execution_pk": pk},
            files={"video_recording": ("n" * 251 + ".srt", SRT, "application/" + "x" * 116)})  # at the sizes
    with wf.db() as db:
        assert store.uploaded_file(db, pk, "video_recording").filename == "n" * 251 + ".srt"


def test_a_workflow_naming_an_unknown_step_is_refused_before_storage(wf):
    spec = json.loads((REPO_ROOT / "tasks_config" / "write_poem.json").read_text())
    spec["name_for_system"] = "write_poem_unknown_step"
    spec["steps"][1]["name_for_system"] = "haiku_writer"
    response = wf.admin().put(wf.base_url + "/task", json=spec)
    assert response.status_code == 400
    assert "haiku_writer" in response.json()["error"] and "steps library" in response.json()["error"]
    assert wf.admin().get(wf.base_url + "/task", params={"name_for_system": "write_poem_unknown_step"}
                          ).status_code in (400, 404)


def test_the_result_chat_edits_the_final_document_into_a_new_version(wf, llm):
    user, created, pk, divider = at_the_divider(wf, llm, ["a"])
    llm.script(Reply("Waves roll in"))
    validate(user, divider["user_workflow_step_execution_pk"])
    wait_completed(user, pk)
    llm.script(Reply("<execution><title>Night sea</title><draft>Waves roll in, softly</draft></execution>"))
    socket = user.socket(created["session_id"])
    try:
        user.ok("PUT", "/user_message", json={"session_id": created["session_id"], "user_task_execution_pk": pk,
                                              "text": "Make it softer", "message_id": "chat-1"})
        draft = socket.wait_event("draft_message")[0]
        assert draft["produced_text"] == "Waves roll in, softly" and draft["produced_text_version_index"] == 2
        assert "Waves roll in" in llm.requests[-1]["messages"][0]["content"]  # the prompt holds the result
    finally:
        socket.close()


def test_a_restart_from_rank_1_with_a_new_transcript_file(wf, llm):
    user = poem_user(wf)
    llm.script(Reply("1. Old"))
    created = start_doc(user, "old.txt", b"The old talk.")
    pk = created["user_task_execution_pk"]
    wait_steps(user, pk, awaiting(2))
    llm.script(Reply("1. New"))
    restarted = user.ok("POST", "/restart_user_workflow_execution",
                        data={"user_task_execution_pk": pk, "from_rank": "1"},
                        files={"video_recording": ("new.srt", SRT, "application/x-subrip")})
    assert restarted["json_inputs_values"] == {"video_recording": "new.srt"}
    rows = wait_steps(user, pk, lambda rs: awaiting(2)(rs) and rs[0]["parameter"] == {"video_recording": "new.srt"})
    assert rows[0]["result"] == [{"transcription": "First we plan.\nThen we build."}]
    assert rows[1]["result"] == [{"chapters": "1. New"}]


def test_a_recording_may_exceed_the_2_mb_limit_of_other_requests(wf, llm):
    user = poem_user(wf)
    big = b"We talk at length. " * (3 * 1024 * 1024 // 19)  # ~3 MB
    llm.script(Reply("1. Length"))
    created = start_doc(user, "long.txt", big)
    rows = wait_steps(user, created["user_task_execution_pk"], awaiting(2))
    assert rows[0]["result"][0]["transcription"].startswith("We talk at length.")
    other = user.call("PUT", "/user_message", json={
        "session_id": created["session_id"], "text": "x" * (3 * 1024 * 1024),
        "user_task_execution_pk": created["user_task_execution_pk"]})
    assert other.status_code == 413 and "error" in other.json()
