"""A long conversation is windowed to the context budget (tight server: 120 tokens)."""

from __future__ import annotations

from mojodex_core.execution.prompt import estimate_tokens
from tests.integration._helpers import QUESTION, new_execution, send
from tests.integration.conftest import TIGHT_CONTEXT_TOKENS
from tests.support.scripted_llm import Reply


def test_long_conversation_keeps_the_latest_messages_that_fit(tight, llm):
    client = tight.new_user()
    pk, session_id = new_execution(client)
    said = [f"message {i}: " + "x" * 90 for i in range(4)]
    socket = client.socket(session_id)
    try:
        llm.script(*(Reply(QUESTION) for _ in said))
        for n, text in enumerate(said, start=1):
            send(client, pk, session_id, text)
            socket.wait_event("mojo_message", n)
    finally:
        socket.close()
    last = llm.requests[-1]["messages"]
    assert last[0]["role"] == "system" and "TASK" in last[0]["content"]  # the prompt is never windowed
    conversation = last[1:]
    assert conversation == [
        {"role": "user", "content": said[2]},
        {"role": "assistant", "content": QUESTION},
        {"role": "user", "content": said[3]},
    ]
    assert sum(estimate_tokens(m["content"]) for m in conversation) <= TIGHT_CONTEXT_TOKENS
    # the first turns were under budget and saw everything before them
    assert [m["content"] for m in llm.requests[1]["messages"][1:]] == [said[0], QUESTION, said[1]]
