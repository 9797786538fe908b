"""The optional `tools` list of instruct task specs."""

from __future__ import annotations

import copy

import pytest

from mojodex_core.task_spec import SpecError, validate_spec
from tests.support.live import TEST_TASK


def spec_with(tools):  # noqa: ANN001, ANN201
    spec = copy.deepcopy(TEST_TASK)
    spec["tools"] = tools
    return spec


def test_tools_are_optional_and_default_to_empty():
    assert validate_spec(TEST_TASK).tools == []


def test_a_valid_tools_list():
    spec = validate_spec(spec_with([
        {"name": "internal_memory", "usage_description": "search"},
        {"name": "http_json", "usage_description": "crm", "requires_approval": True, "config": {"url": "https://x"}},
    ]))
    assert [(t.name, t.requires_approval, t.config) for t in spec.tools] == [
        ("internal_memory", False, {}), ("http_json", True, {"url": "https://x"})]


def test_a_tool_timeout_may_be_any_positive_number_of_seconds():
    for timeout in (0.5, 3, 600):
        tools = [{"name": "http_json", "usage_description": "crm", "config": {"timeout_s": timeout}}]
        assert validate_spec(spec_with(tools)).tools[0].config["timeout_s"] == timeout


@pytest.mark.parametrize(
    ("tools", "path", "words"),
    [
        ([{"name": "a", "usage_description": "x"}, {"name": "a", "usage_description": "y"}], "tools", "unique"),
        ([{"name": "a"}], "tools[0].usage_description", ""),
        ([{"name": "a", "usage_description": "x", "requires_approval": "yes"}], "tools[0].requires_approval", ""),
        ([{"name": "a", "usage_description": "x", "colour": "red"}], "tools[0].colour", ""),
        ([{"name": "Bad Name", "usage_description": "x"}], "tools[0].name", "must match"),
        ([{"name": "a", "usage_description": "x", "config": []}], "tools[0].config", ""),
        ([{"name": "a", "usage_description": "x", "config": {"timeout_s": "abc"}}], "tools[0].config", "timeout_s"),
        ([{"name": "a", "usage_description": "x", "config": {"timeout_s": -1}}], "tools[0].config", "above 0"),
        ([{"name": "a", "usage_description": "x", "config": {"timeout_s": 0}}], "tools[0].config", "above 0"),
        ([{"name": "a", "usage_description": "x", "config": {"timeout_s": True}}], "tools[0].config", "timeout_s"),
        ([{"name": "a", "usage_description": "x", "config": {"timeout_s": 601}}], "tools[0].config", "at most 600"),
    ],
)
def test_invalid_tools_are_rejected_with_a_path(tools, path, words):
    with pytest.raises(SpecError) as info:
        validate_spec(spec_with(tools))
    issues = [(i.path, i.rule) for i in info.value.errors]
    assert any(p == path and words in m for p, m in issues), issues
