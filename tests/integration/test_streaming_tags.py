"""Tags in streamed replies, through the live server: every chunk split, prose, unknown and
unclosed tags, and the token coalescing bound."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration._helpers import (
    BODY,
    DRAFT,
    QUESTION,
    QUESTION_TEXT,
    TITLE,
    assert_clean,
    message,
    new_execution,
    one_turn,
    send,
    turn_deltas,
)
from tests.support.scripted_llm import Reply


def _split_every_position(live, llm, text: str, final_event: str) -> list[tuple[int, dict, dict]]:
    """One turn per split position i (chunks text[:i], text[i:]), all queued at once in one session.

    Turns of a session run one at a time, in order, so the i-th scripted reply answers the
    i-th message. Returns (i, final payload, deltas per channel) for every position.
    """
    client = live.new_user()
    pk, session_id = new_execution(client)
    socket = client.socket(session_id)
    try:
        positions = list(range(len(text) + 1))
        llm.script(*(Reply(chunks=[text[:i], text[i:]]) for i in positions))
        split_of = {send(client, pk, session_id, f"split {i}")["message_pk"]: i for i in positions}
        finals = socket.wait_event(final_event, len(positions), timeout=60)
        assert not socket.named("error")
        events = list(socket.events)
    finally:
        socket.close()
    assert sorted(split_of[f["user_message_pk"]] for f in finals) == positions  # each answered once
    return [(split_of[f["user_message_pk"]], f, turn_deltas(events, f)) for f in finals]


def test_question_reply_split_at_every_position(live, llm):
    results = _split_every_position(live, llm, QUESTION, "mojo_message")
    for i, final, deltas in results:
        assert final["text"] == QUESTION_TEXT, f"split at {i}"
        assert "".join(deltas["mojo"]) == QUESTION_TEXT, f"split at {i}: {deltas['mojo']}"
        assert deltas["title"] == deltas["draft"] == [], f"split at {i}"
        assert_clean(deltas["mojo"])


def test_execution_reply_split_at_every_position(live, llm):
    results = _split_every_position(live, llm, DRAFT, "draft_message")
    indexes = sorted(final["produced_text_version_index"] for _i, final, _d in results)
    assert indexes == list(range(1, len(DRAFT) + 2))  # one version per turn, gap-free
    for i, final, deltas in results:
        assert (final["produced_text_title"], final["produced_text"]) == (TITLE, BODY), f"split at {i}"
        assert "".join(deltas["title"]) == TITLE, f"split at {i}: {deltas['title']}"
        assert "".join(deltas["draft"]) == BODY, f"split at {i}: {deltas['draft']}"
        assert deltas["mojo"] == [], f"split at {i}"
        assert_clean(deltas["title"] + deltas["draft"])


PROSE_QUESTION = "Happy to help! <ask_user_primary_info>" + QUESTION_TEXT + "</ask_user_primary_info> Thanks."


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(0, len(PROSE_QUESTION)), max_size=5).map(sorted))
def test_prose_question_any_chunking(live, llm, cuts):
    llm.reset()
    bounds = [0, *cuts, len(PROSE_QUESTION)]
    chunks = [PROSE_QUESTION[a:b] for a, b in itertools.pairwise(bounds)]
    final, deltas = one_turn(live, llm, Reply(chunks=chunks), "hello", "mojo_message")
    assert final["text"] == "Happy to help!\n" + QUESTION_TEXT + "\nThanks."
    assert "".join(deltas["mojo"]) == final["text"]
    assert_clean(deltas["mojo"])


def test_prose_around_an_execution_is_streamed_but_the_draft_is_exact(live, llm):
    final, deltas = one_turn(live, llm, Reply("Here it is: " + DRAFT + " Hope it helps!"), "write it", "draft_message")
    assert (final["produced_text_title"], final["produced_text"]) == (TITLE, BODY)
    assert "".join(deltas["draft"]) == BODY
    assert "".join(deltas["mojo"]) == "Here it is:\nHope it helps!"
    assert_clean(deltas["mojo"] + deltas["draft"] + deltas["title"])


def test_unknown_tags_never_reach_clients_but_stay_in_the_database(live, llm):
    reply = "<thinking>hmm</thinking><ask_user_primary_info>Who is <b>it</b> for?</ask_user_primary_info>"
    final, deltas = one_turn(live, llm, Reply(reply), "hello", "mojo_message")
    assert "<" not in final["text"] and "thinking" not in final["text"]
    assert "Who is it for?" in final["text"]
    assert "".join(deltas["mojo"]) == final["text"]
    assert all("<" not in d and "thinking" not in d for d in deltas["mojo"])
    stored = message(live, final["message_pk"])
    assert stored.text == final["text"]
    assert stored.text_with_tags == reply


def test_unclosed_execution_at_stream_end_still_yields_a_draft(live, llm):
    reply = "<user_language>en</user_language><execution><title>" + TITLE + "</title><draft>" + BODY
    final, deltas = one_turn(live, llm, Reply(reply), "write it", "draft_message")
    assert (final["produced_text_title"], final["produced_text"]) == (TITLE, BODY)
    assert "".join(deltas["draft"]) == BODY
    assert message(live, final["message_pk"]).text_with_tags == reply


def test_tokens_are_coalesced(live, llm):
    """500 chunks sent back to back reach the client as far fewer token events (one per ~30 ms)."""
    chunks = [f"w{i} " for i in range(500)]
    final, deltas = one_turn(live, llm, Reply(chunks=chunks), "hello", "mojo_message")
    assert "".join(deltas["mojo"]) == final["text"] == "".join(chunks).strip()
    assert len(deltas["mojo"]) <= len(chunks) / 3, len(deltas["mojo"])
