"""Both shipped workflows end to end through the live server and the scripted LLM."""

from __future__ import annotations

import json

from tests.support.scripted_llm import Reply
from tests.workflow._helpers import (
    awaiting,
    poem_user,
    prompts,
    start_doc,
    start_poem,
    steps,
    validate,
    wait_completed,
    wait_steps,
)

TOPICS = ["the tide comes in", "the lighthouse", "dawn"]


def test_write_poem_fans_out_one_stanza_per_topic_after_validation(wf, llm):
    user = poem_user(wf)
    llm.script(Reply(json={"stanza_topics": TOPICS}))
    created = start_poem(user)
    pk = created["user_task_execution_pk"]
    socket = user.socket(created["session_id"])
    try:
        rows = wait_steps(user, pk, awaiting(1))
        (divider,) = rows
        assert divider["step_name_for_system"] == "stanza_divider"
        assert divider["parameter"] == {"poem_topic": "the sea at night"}
        assert divider["result"] == [{"stanza_topic": t} for t in TOPICS]
        assert divider["user_validation_required"] is True and divider["review_chat_enabled"] is True
        assert len(llm.requests) == 1  # waits for the user: the writer has not run
        llm.script(*(Reply(f"Stanza about {t}") for t in TOPICS))
        validated = validate(user, divider["user_workflow_step_execution_pk"])
        assert validated["validated"] is True and validated["run_submitted"] is True
        produced = wait_completed(user, pk)
        assert produced["produced_text"] == "\n\n".join(f"Stanza about {t}" for t in TOPICS)
        assert produced["produced_text_version_index"] == 1
        rows = steps(user, pk)
        writers = [r for r in rows if r["rank"] == 2]
        assert [w["parameter"] for w in writers] == [{"stanza_topic": t} for t in TOPICS]  # fan-out: 3 runs
        assert all(w["validated"] is True and w["status"] == "done" for w in writers)
        assert all(w["parent_user_workflow_step_execution_pk"] == divider["user_workflow_step_execution_pk"]
                   for w in writers)
        # Each writer's prompt names its own topic.
        for topic, request in zip(TOPICS, llm.requests[1:], strict=True):
            assert topic in json.dumps(request["messages"])
        socket.wait_event("workflow_execution_produced_text")
        names = [e for e, _ in socket.events]
        assert names.count("workflow_step_execution_started") >= 3
        assert names.count("workflow_step_execution_ended") >= 3
        ended = socket.named("workflow_step_execution_ended")[-1]
        assert ended["result"] == [{"stanza": "Stanza about dawn"}]
    finally:
        socket.close()


def test_doc_gen_workflow_runs_unchanged_from_an_uploaded_subtitle_file(wf, llm):
    user = poem_user(wf)
    vtt = (b"WEBVTT\n\n1\n00:00:00.000 --> 00:00:02.000\nWelcome to the onboarding.\n\n"
           b"2\n00:00:02.000 --> 00:00:05.000\n<v Ana>We install the tools first.\n")
    llm.script(Reply("1. Welcome\n2. Tools"))
    created = start_doc(user, "talk.vtt", vtt)
    pk = created["user_task_execution_pk"]
    rows = wait_steps(user, pk, awaiting(2))
    transcription, chapters = sorted(rows, key=lambda r: r["rank"])
    assert transcription["result"] == [{"transcription": "Welcome to the onboarding.\nWe install the tools first."}]
    assert transcription["validated"] is True  # no validation required: it chained on
    assert chapters["result"] == [{"chapters": "1. Welcome\n2. Tools"}]
    assert "We install the tools first." in json.dumps(llm.requests[0]["messages"])
    llm.script(Reply("# Onboarding guide\n\n## Welcome\nHello.\n\n## Tools\nInstall them."))
    validate(user, chapters["user_workflow_step_execution_pk"])
    produced = wait_completed(user, pk)
    assert produced["produced_text_title"] == "Onboarding guide"
    assert produced["produced_text"].startswith("## Welcome")
    assert "1. Welcome\n2. Tools" in prompts(llm)[1] or "1. Welcome" in json.dumps(llm.requests[1]["messages"])
