"""Parsing tool requests (both forms) and checking them against the task's tools."""

from __future__ import annotations

from mojodex_core.execution.tool_requests import (
    ToolRequest,
    from_function_calls,
    from_tags,
    openai_tools,
    result_messages,
)
from mojodex_core.execution.tool_runs import check_request
from mojodex_core.tags import TagStreamParser, parse_reply

CALL = ('<reasoning>why</reasoning>Let me look.<tool_call><tool_name>internal_memory</tool_name>'
        '<tool_query>{"query": "a < b"}</tool_query><tool_explanation>Searching.</tool_explanation></tool_call>')
TASK_TOOLS = {"internal_memory": {"name": "internal_memory", "usage_description": "search"}}


def test_tag_form_is_parsed_and_hidden_at_every_split():
    for i in range(len(CALL) + 1):
        parser = TagStreamParser()
        shown = [d.text for d in parser.feed(CALL[:i]) + parser.feed(CALL[i:])]
        tail, reply = parser.finish()
        shown += [d.text for d in tail]
        assert "".join(shown) == "Let me look.", i
        (request,) = from_tags(reply)
        assert (request.name, request.query, request.explanation, request.native) == (
            "internal_memory", {"query": "a < b"}, "Searching.", False)


def test_tag_form_with_bad_json_keeps_the_raw_query():
    (request,) = from_tags(parse_reply("<tool_call><tool_name>x</tool_name><tool_query>{oops</tool_query></tool_call>"))
    assert request.query is None and "not valid JSON" in request.query_error
    assert request.stored_query() == {"raw": "{oops"}


def test_function_calls_are_parsed_and_the_explanation_split_off():
    calls = [{"id": "c1", "function": {"name": "internal_memory",
                                       "arguments": '{"query": "q", "explanation": "Looking."}'}}]
    (request,) = from_function_calls(calls)
    assert (request.name, request.query, request.explanation, request.call_id) == (
        "internal_memory", {"query": "q"}, "Looking.", "c1")


def test_check_request():
    ok = ToolRequest(name="internal_memory", query={"query": "q"})
    assert check_request(ok, TASK_TOOLS) is None
    assert "unknown tool 'http_json'" in check_request(ToolRequest(name="http_json", query={}), TASK_TOOLS)
    bad = check_request(ToolRequest(name="internal_memory", query={"query": 3}), TASK_TOOLS)
    assert bad.startswith("invalid query for internal_memory: query: 3 is not of type")



def test_a_tool_the_spec_lists_but_the_server_lacks_is_said_so():
    """A tester got "unknown tool 'weather' (tools of this task: internal_memory, weather)": the spec listed a
    tool this server does not have, and the message contradicted itself."""
    tools = {**TASK_TOOLS, "weather": {"name": "weather", "usage_description": "x"}}
    problem = check_request(ToolRequest(name="weather", query={}), tools)
    assert problem == "the tool 'weather' is not installed on this server (tools of this task: internal_memory)"
    assert check_request(ToolRequest(name="other", query={}), tools).endswith("(tools of this task: internal_memory)")


def test_openai_tools_and_result_messages():
    (offered,) = openai_tools([TASK_TOOLS["internal_memory"]], {"internal_memory": {"type": "object"}})
    assert offered["function"]["name"] == "internal_memory"
    assert "explanation" in offered["function"]["parameters"]["properties"]
    native = ToolRequest(name="t", query={}, call_id="c1", raw_query="{}")
    tagged = ToolRequest(name="u", query={})
    messages = result_messages("<tool_call>..</tool_call>", "", [(native, {"a": 1}), (tagged, {"b": 2})])
    assert [m["role"] for m in messages] == ["assistant", "tool", "user"]
    assert messages[1] == {"role": "tool", "tool_call_id": "c1", "content": '{"a": 1}'}
    assert messages[2]["content"] == '<tool_result><tool_name>u</tool_name><result>{"b": 2}</result></tool_result>'
