"""Table tests for mojodex_core.tags (incremental Mojodex tag parser)."""

from __future__ import annotations

import time

import pytest

from mojodex_core.tags import ParsedReply, StreamDelta, TagStreamParser, lookup, parse_reply
from mojodex_core.tags.lexer import MAX_NAME_LEN
from mojodex_core.tags.spec import Role

QUESTION = (
    "<user_language>en</user_language>\n"
    "<missing_primary_info>the recipient's name</missing_primary_info>\n"
    "<ask_user_primary_info>Who should the email go to?</ask_user_primary_info>\n"
)
EXECUTION = (
    "<user_language>fr</user_language>\n"
    "<execution>\n"
    "<title>Meeting recap</title>\n"
    "<draft>Hello team,\n...</draft>\n"
    "</execution>"
)


def stream(chunks: list[str]) -> tuple[dict[str, str], list[StreamDelta], ParsedReply]:
    parser = TagStreamParser()
    deltas: list[StreamDelta] = []
    for chunk in chunks:
        deltas += parser.feed(chunk)
    tail, reply = parser.finish()
    deltas += tail
    joined = {ch: "".join(d.text for d in deltas if d.channel == ch) for ch in ("mojo", "title", "draft")}
    return joined, deltas, reply


def check_invariants(text: str) -> ParsedReply:
    """Whole-text and char-by-char runs agree, and deltas match the fields."""
    reply = parse_reply(text)
    for chunks in ([text], list(text)):
        joined, deltas, streamed = stream(chunks)
        assert streamed == reply
        assert all(d.text for d in deltas), "no empty deltas"
        assert joined["mojo"] == reply.text
        assert joined["title"] == (reply.title or "")
        assert joined["draft"] == (reply.draft or "")
    assert reply.text_with_tags == text
    return reply


# ---------------------------------------------------------------- the protocol


def test_question_reply() -> None:
    r = check_invariants(QUESTION)
    assert r.kind == "question"
    assert r.text == "Who should the email go to?"
    assert r.language == "en"
    assert r.missing_infos == {"primary_info": "the recipient's name"}
    assert r.title is None and r.draft is None
    assert r.tags == ["user_language", "missing_primary_info", "ask_user_primary_info"]
    assert r.unclosed == []


def test_execution_reply() -> None:
    r = check_invariants(EXECUTION)
    assert r.kind == "execution"
    assert (r.title, r.draft, r.language, r.text) == ("Meeting recap", "Hello team,\n...", "fr", "")
    assert r.tags == ["user_language", "execution", "title", "draft"]


@pytest.mark.parametrize(
    ("text", "kind", "mojo"),
    [
        ("Just a plain answer.", "text", "Just a plain answer."),
        ("<ask_user_input>Which date?</ask_user_input>", "question", "Which date?"),
        ("<missing_meeting_date>date</missing_meeting_date>", "question", ""),
        ("<tool_to_use>web_search</tool_to_use><tool_usage>{\"q\": 1}</tool_usage>", "tool", ""),
        # Precedence: execution > tool > question > text.
        ("<ask_user_input>Q</ask_user_input><execution><draft>D</draft></execution>", "execution", "Q"),
        ("<ask_user_input>Q</ask_user_input><tool_to_use>t</tool_to_use>", "tool", "Q"),
        ("<tool_to_use>t</tool_to_use><execution><draft>D</draft></execution>", "execution", ""),
        ("<reasoning>think</reasoning>Hi", "text", "Hi"),
        # Tags inside hidden content are content: they vote for nothing.
        ("<reasoning>maybe <ask_user_input>x</ask_user_input></reasoning>ok", "text", "ok"),
    ],
)
def test_kind_and_text(text: str, kind: str, mojo: str) -> None:
    r = check_invariants(text)
    assert (r.kind, r.text) == (kind, mojo)


def test_missing_info_names_and_last_wins() -> None:
    r = check_invariants(
        "<missing_meeting_date> next week </missing_meeting_date>"
        "<missing_primary_info>a</missing_primary_info><missing_primary_info>b</missing_primary_info>"
    )
    assert r.missing_infos == {"meeting_date": "next week", "primary_info": "b"}
    assert r.captured["missing_primary_info"] == ["a", "b"]


def test_prose_around_tags_joined_by_newline() -> None:
    r = check_invariants("Sure thing.<ask_user_input>  Who?  </ask_user_input>\n\nThanks ")
    assert r.text == "Sure thing.\nWho?\nThanks"


def test_execution_keeps_prose_and_hides_loose_container_text() -> None:
    r = check_invariants(
        "Here it is:\n<execution>junk<title>T</title>more junk<draft>D</draft></execution>\nEnjoy!"
    )
    assert (r.kind, r.text, r.title, r.draft) == ("execution", "Here it is:\nEnjoy!", "T", "D")


def test_hidden_tags_never_emitted_and_captured_raw() -> None:
    text = (
        "<user_language> EN </user_language><reasoning>secret <b>plan</b></reasoning>"
        '<tool_to_use>{"query": "a <b> c", "x": "</i>"}</tool_to_use>Visible'
    )
    joined, _, r = stream(list(text))
    assert joined == {"mojo": "Visible", "title": "", "draft": ""}
    assert r.language == "en"
    assert r.captured == {
        "user_language": ["EN"],
        "reasoning": ["secret <b>plan</b>"],
        "tool_to_use": ['{"query": "a <b> c", "x": "</i>"}'],
    }
    # Markup inside hidden content is content, not structure.
    assert r.tags == ["user_language", "reasoning", "tool_to_use"]
    assert r.unclosed == []


def test_closing_an_ancestor_from_inside_hidden_content() -> None:
    r = check_invariants("<ask_user_input>Q<reasoning>r</ask_user_input>after")
    assert (r.text, r.unclosed, r.captured) == ("Q\nafter", ["reasoning"], {"reasoning": ["r"]})


@pytest.mark.parametrize(
    ("text", "language"),
    [("<user_language>FR</user_language>", "fr"), ("<user_language> </user_language>", None), ("hi", None)],
)
def test_language(text: str, language: str | None) -> None:
    assert check_invariants(text).language == language


def test_unknown_tags_are_stripped_but_content_kept() -> None:
    r = check_invariants("I <foo>really</foo> mean <Bar-1>it</Bar-1>.")
    assert r.text == "I really mean it."
    assert r.kind == "text"
    assert r.tags == ["foo", "bar-1"]
    assert "<foo>really</foo>" in r.text_with_tags


def test_unknown_tag_inside_draft_stays_in_draft() -> None:
    r = check_invariants("<execution><draft>Dear <b>Bob</b>,</draft></execution>")
    assert r.draft == "Dear Bob,"


def test_title_and_draft_outside_execution_are_unknown_tags() -> None:
    r = check_invariants("<title>T</title> and <draft>D</draft>")
    assert (r.kind, r.text, r.title, r.draft) == ("text", "T and D", None, None)


def test_tag_names_are_case_insensitive() -> None:
    r = check_invariants("<EXECUTION><Title>T</TITLE><draft>D</Draft></Execution>")
    assert (r.kind, r.title, r.draft, r.unclosed) == ("execution", "T", "D", [])


def test_bare_prefix_is_not_a_known_tag() -> None:
    assert lookup("missing_").role is Role.TRANSPARENT
    assert lookup("missing_x").role is Role.HIDDEN
    assert lookup("tool_usage").role is Role.HIDDEN
    assert check_invariants("<missing_>x</missing_>").text == "x"


# -------------------------------------------------------- unclosed / malformed


def test_unclosed_execution_still_yields_draft() -> None:
    r = check_invariants("<execution><title>T</title><draft>Hello\nwor")
    assert (r.kind, r.title, r.draft, r.unclosed) == ("execution", "T", "Hello\nwor", ["execution", "draft"])


def test_unclosed_title() -> None:
    r = check_invariants("<execution><title>Partial ti")
    assert (r.title, r.draft, r.unclosed) == ("Partial ti", None, ["execution", "title"])


def test_implicit_close_reports_unclosed_in_open_order() -> None:
    r = check_invariants("<execution><draft>x<foo>y</execution><ask_user_input>q")
    assert r.draft == "xy"
    assert r.unclosed == ["draft", "foo", "ask_user_input"]


def test_stray_closing_tags_are_dropped() -> None:
    r = check_invariants("a</draft> b</foo></execution>")
    assert (r.text, r.unclosed, r.tags) == ("a b", [], [])


def test_unclosed_hidden_tag_is_captured() -> None:
    r = check_invariants("<missing_x>the name")
    assert (r.missing_infos, r.unclosed, r.kind) == ({"x": "the name"}, ["missing_x"], "question")


def test_truncated_tag_at_end_of_stream_is_dropped() -> None:
    for text in ("Hello </dra", "Hello <", "Hello </"):
        joined, _, r = stream([text])
        assert joined["mojo"] == "Hello"
        assert r.text_with_tags == text


def test_truncated_tag_inside_hidden_is_captured() -> None:
    assert check_invariants("<missing_x>abc</missing_").missing_infos == {"x": "abc</missing_"}


# --------------------------------------------------------------- not-a-tag text


@pytest.mark.parametrize(
    "text",
    [
        "a < b",
        "x > y",
        "I <3 you",
        "<< shift",
        "< tag>",
        "<>",
        "</>",
        "< /b>",
        "<a b>",
        "<a.b>",
        "<1abc>",
        "5 <= 6 -> true",
        "<" + "a" * (MAX_NAME_LEN + 1) + ">",
        "</" + "a" * (MAX_NAME_LEN + 1) + ">",
    ],
)
def test_non_tags_are_plain_text(text: str) -> None:
    r = check_invariants(text)
    assert r.text == text.strip()
    assert r.tags == []


def test_longest_allowed_name_is_a_tag() -> None:
    name = "a" * MAX_NAME_LEN
    assert check_invariants(f"x<{name}>y</{name}>").text == "xy"


def test_text_right_before_a_tag_after_failed_candidate() -> None:
    r = check_invariants("1<<ask_user_input>Q</ask_user_input>")
    assert r.text == "1<\nQ"


# ------------------------------------------------------------ incrementality


def test_partial_tag_is_held_back_then_resolved() -> None:
    p = TagStreamParser()
    assert p.feed("Hello <ask_user_input>Who?</ask_us") == [StreamDelta("mojo", "Hello\nWho?")]
    assert p.feed("") == []
    assert p.feed("er_input") == []
    assert p.feed("> tail") == [StreamDelta("mojo", "\ntail")]


def test_lone_lt_held_until_known_not_a_tag() -> None:
    p = TagStreamParser()
    assert p.feed("a <") == [StreamDelta("mojo", "a")]
    assert p.feed("3") == [StreamDelta("mojo", " <3")]
    p2 = TagStreamParser()
    assert p2.feed("a <") == [StreamDelta("mojo", "a")]
    assert p2.feed(" b") == [StreamDelta("mojo", " < b")]


def test_trailing_whitespace_held_until_content() -> None:
    p = TagStreamParser()
    assert p.feed("<ask_user_input>  ") == []
    assert p.feed("Who") == [StreamDelta("mojo", "Who")]
    assert p.feed(" is \n") == [StreamDelta("mojo", " is")]
    assert p.feed(" it?") == [StreamDelta("mojo", " \n it?")]
    assert p.feed("  </ask_user_input>\n\n") == []
    assert p.feed("Bye") == [StreamDelta("mojo", "\nBye")]
    tail, reply = p.finish()
    assert tail == [] and reply.text == "Who is \n it?\nBye"


def test_one_feed_merges_deltas_per_channel_run() -> None:
    p = TagStreamParser()
    out = p.feed("a<b>b</b>c<execution><title>T</title><draft>D1 <i>D2</i></draft></execution>")
    assert out == [StreamDelta("mojo", "abc"), StreamDelta("title", "T"), StreamDelta("draft", "D1 D2")]


def test_feed_after_finish_raises() -> None:
    p = TagStreamParser()
    p.finish()
    with pytest.raises(RuntimeError):
        p.feed("x")
    with pytest.raises(RuntimeError):
        p.finish()


# ------------------------------------------------------------------ speed


def _one_char_at_a_time(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        p = TagStreamParser()
        for c in text:
            p.feed(c)
        p.finish()
        best = min(best, time.perf_counter() - start)
    return best


def _big_reply(n: int) -> str:
    # Mixes every costly path: candidates that fail, tags, long whitespace
    # runs held back, long hidden captures, many unclosed unknown tags and
    # stray closing tags.
    unit = (
        "Prose a < b and x > y <3 <<br> "
        "<execution><draft>Body   \n\n  text <i>it</i></draft></execution>"
        "<reasoning>hidden <b>stuff</b></reasoning></nope>" + " " * 40
    )
    return (unit * (n // len(unit) + 1))[:n]


def test_one_char_feeding_is_linear() -> None:
    small, big = _big_reply(5_000), _big_reply(40_000)
    t_small = _one_char_at_a_time(small)
    t_big = _one_char_at_a_time(big)
    assert t_small < 1.0
    # 8x the input: linear is ~8x the time, quadratic would be ~64x.
    assert t_big / t_small < 24, (t_small, t_big)


# ------------------------------------------------- a <reasoning> never closed


def every_split(text: str) -> ParsedReply:
    """check_invariants, and the same reply at every two-way split of the stream."""
    reply = check_invariants(text)
    for i in range(len(text) + 1):
        joined, deltas, streamed = stream([text[:i], text[i:]])
        assert streamed == reply, i
        assert joined["mojo"] == reply.text and all(d.text for d in deltas)
    return reply


@pytest.mark.parametrize(
    ("text", "kind", "mojo", "why"),
    [
        # was: everything after <reasoning> hidden, the reply lost ("empty answer")
        ("<reasoning>the user wants a name <ask_user_primary_info>Who is it for?</ask_user_primary_info>",
         "question", "Who is it for?", "the user wants a name"),
        ("<reasoning>why <b>so</b>\n<user_language>en</user_language>Hello there", "text", "Hello there",
         "why <b>so</b>"),
        ("<reasoning>I search <tool_call><tool_name>t</tool_name></tool_call>", "tool", "", "I search"),
        ("<reasoning>a greeting\n\nHello! <i>How</i> can I help?", "text", "a greeting\n\nHello! How can I help?",
         "a greeting\n\nHello! <i>How</i> can I help?"),
        # a tag cut off by the end of the stream is still never shown
        ("<reasoning>Hello! </ask_us", "text", "Hello!", "Hello! </ask_us"),
        # <title> means nothing outside <execution>: no end there
        ("<reasoning>x <title>T", "text", "x T", "x <title>T"),
    ],
)
def test_an_unclosed_reasoning_ends_at_the_first_known_tag_or_holds_the_reply(
    text: str, kind: str, mojo: str, why: str
) -> None:
    r = every_split(text)
    assert (r.kind, r.text, r.captured["reasoning"], r.unclosed[0]) == (kind, mojo, [why], "reasoning")


def test_an_unclosed_reasoning_before_a_draft_keeps_the_draft() -> None:
    r = every_split("<reasoning>all known <execution><title>T</title><draft>Body</draft></execution>")
    assert (r.kind, r.title, r.draft, r.text, r.captured["reasoning"]) == ("execution", "T", "Body", "", ["all known"])


def test_an_unclosed_reasoning_stays_hidden_when_the_reply_shows_or_does_something() -> None:
    for text in ("Hello! <reasoning>now I wait", "<route_to_task>t</route_to_task><reasoning>they want it",
                 "<tool_call>x</tool_call><reasoning>then"):
        r = every_split(text)
        assert "wait" not in r.text and "they" not in r.text and "then" not in r.text, text
        assert r.unclosed == ["reasoning"]
    # a native function call: the parser is told, the reasoning is its why
    parser = TagStreamParser()
    assert parser.feed("<reasoning>I call the tool") == []
    tail, r = parser.finish(calls_tools=True)
    assert (tail, r.text, r.captured["reasoning"]) == ([], "", ["I call the tool"])


# what the parser cannot see: a native function call, an earlier call's text, a cut by the token limit
@pytest.mark.parametrize("told", [{"calls_tools": True}, {"shown_before": True}, {"truncated": True}])
def test_an_unclosed_reasoning_stays_hidden_when_the_caller_says_so(told: dict[str, bool]) -> None:
    parser = TagStreamParser()
    assert parser.feed("<reasoning>the user seems impatient") == []
    tail, r = parser.finish(**told)
    assert (tail, r.text, r.captured["reasoning"]) == ([], "", ["the user seems impatient"])


def test_a_closed_reasoning_naming_tags_is_unchanged() -> None:
    r = every_split("<reasoning>no <execution> yet, <ask_user_input> first</reasoning>Who?")
    assert (r.kind, r.text, r.unclosed) == ("text", "Who?", [])
    assert r.captured["reasoning"] == ["no <execution> yet, <ask_user_input> first"]


def test_several_unclosed_reasonings() -> None:
    r = every_split("<reasoning>a <ask_user_input>Q</ask_user_input><reasoning>b <execution><draft>D")
    assert (r.kind, r.text, r.draft, r.captured["reasoning"]) == ("execution", "Q", "D", ["a", "b"])
    assert r.unclosed == ["reasoning", "reasoning", "execution", "draft"]
