"""The tool settings: MOJODEX_LLM_TOOL_MODE, MOJODEX_TOOL_MAX_CALLS, MOJODEX_TOOL_TIMEOUT_S."""

from __future__ import annotations

import pytest

from mojodex_core.config import ConfigError, load_settings
from tests.foundation.test_config import env


def test_defaults(tmp_path):
    settings = load_settings(env(tmp_path))
    assert (settings.tool_mode, settings.tool_max_calls, settings.tool_timeout_s) == ("auto", 3, 10.0)


def test_values_are_read(tmp_path):
    settings = load_settings(env(tmp_path, MOJODEX_LLM_TOOL_MODE="Tags", MOJODEX_TOOL_MAX_CALLS="5",
                                 MOJODEX_TOOL_TIMEOUT_S="2.5"))
    assert (settings.tool_mode, settings.tool_max_calls, settings.tool_timeout_s) == ("tags", 5, 2.5)


@pytest.mark.parametrize(
    ("name", "value"),
    [("MOJODEX_LLM_TOOL_MODE", "sometimes"), ("MOJODEX_TOOL_MAX_CALLS", "-1"), ("MOJODEX_TOOL_TIMEOUT_S", "x")],
)
def test_malformed_values_name_the_variable(tmp_path, name, value):
    with pytest.raises(ConfigError, match=name):
        load_settings(env(tmp_path, **{name: value}))
