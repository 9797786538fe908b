"""http_json against a local HTTP server: allow-list, size limit, timeout, redirects, JSON only."""

from __future__ import annotations

import pytest

from mojodex_core.tools import ToolContext, ToolError, get_tool
from tests.integration._tools import JsonService


@pytest.fixture(scope="module")
def service():
    svc = JsonService()
    yield svc
    svc.stop()


def run(config: dict, query: dict | None = None) -> dict:
    return get_tool("http_json").run(query or {}, ToolContext("u", 1, None, config, timeout_s=5))  # type: ignore[arg-type]


def test_calls_the_configured_url_with_params(service):
    result = run({"url": service.url + "/status", "allowed_hosts": ["127.0.0.1"]}, {"params": {"id": 7}})
    assert result == {"status": 200, "data": {"status": "gold", "params": {"id": "7"}}}


@pytest.mark.parametrize(
    ("config", "error"),
    [
        ({"url": "/status", "allowed_hosts": ["example.com"]}, "not in the tool's allowed_hosts"),
        ({"url": "/status", "allowed_hosts": []}, "not in the tool's allowed_hosts"),
        ({"url": "/big", "allowed_hosts": ["127.0.0.1"], "max_bytes": 1000}, "larger than 1000 bytes"),
        ({"url": "/slow", "allowed_hosts": ["127.0.0.1"], "timeout_s": 0.2}, "did not answer within 0.2 s"),
        ({"allowed_hosts": ["127.0.0.1"]}, "no url configured"),
        ({"url": "file:///etc/passwd", "allowed_hosts": [""]}, "only calls http or https"),
    ],
)
def test_refusals(service, config, error):
    if config.get("url", "").startswith("/"):
        config = {**config, "url": service.url + config["url"]}
    with pytest.raises(ToolError, match=error):
        run(config)
