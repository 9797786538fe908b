"""Several messages in one turn, and a client that disconnects in the middle of a stream."""

from __future__ import annotations

import time

from tests.integration._helpers import QUESTION, QUESTION_TEXT, by_seq, new_execution, run_form, send
from tests.support.scripted_llm import Reply


def _ask(text: str) -> str:
    return f"<ask_user_primary_info>{text}</ask_user_primary_info>"


def test_messages_sent_during_a_turn_are_answered_in_order_once_each(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        llm.script(
            Reply(chunks=[QUESTION[i:i + 22] for i in range(0, len(QUESTION), 22)], delay_s=0.15),
            Reply(_ask("Answer two")),
            Reply(_ask("Answer three")),
        )
        form = run_form(client, pk)
        socket.wait_event("mojo_token")  # the first turn is streaming
        two = send(client, pk, session_id, "two")
        three = send(client, pk, session_id, "three")
        assert socket.named("mojo_message") == []  # both were accepted while the first turn ran
        answers = socket.wait_event("mojo_message", 3)
        live.wait_idle()
        answers = socket.named("mojo_message")
    finally:
        socket.close()
    assert [a["user_message_pk"] for a in answers] == [form["message_pk"], two["message_pk"], three["message_pk"]]
    assert [a["text"] for a in answers] == [QUESTION_TEXT, "Answer two", "Answer three"]
    assert len(llm.requests) == 3
    # Each turn sees the conversation in the order it happened, up to its own message.
    second, third = (r["messages"][1:] for r in llm.requests[1:])
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert (second[1]["content"], second[2]["content"]) == (QUESTION, "two")
    assert [m["content"] for m in third[1:]] == [QUESTION, "two", _ask("Answer two"), "three"]


def test_reconnect_with_last_seq_gets_every_missed_event_once(live, llm):
    client = live.new_user()
    pk, session_id = new_execution(client)
    chunks = [f"word{i} " for i in range(30)]
    first = client.socket(session_id)
    try:
        llm.script(Reply(chunks=chunks, delay_s=0.04))
        send(client, pk, session_id, "hello")
        first.wait_for(lambda evs: sum(1 for e, _ in evs if e == "mojo_token") >= 5)
    finally:
        first.close()
    before = by_seq(first.events)
    last_seq = before[-1][1]["seq"]
    time.sleep(0.2)  # tokens keep flowing while the client is away
    second = client.socket(session_id, last_seq=last_seq)
    try:
        final = second.wait_event("mojo_message")[0]
    finally:
        second.close()
    after = by_seq(second.events)
    assert [d["seq"] for _, d in second.events if "seq" in d] == [d["seq"] for _, d in after]  # in order
    seqs = [d["seq"] for _, d in before + after]
    assert seqs == list(range(1, final["seq"] + 1))  # no gap, no duplicate
    assert after[0][1]["seq"] == last_seq + 1
    tokens = [d["delta"] for name, d in before + after if name == "mojo_token"]
    assert "".join(tokens) == final["text"] == "".join(chunks).strip()

    # A client that comes back after the turn gets the same history, tokens included.
    late = client.socket(session_id, last_seq=0)
    try:
        late.wait_event("mojo_message")
    finally:
        late.close()
    assert [(n, d["seq"]) for n, d in late.events] == [(n, d["seq"]) for n, d in before + after]
