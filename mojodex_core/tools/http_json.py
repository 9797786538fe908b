"""http_json: calls an endpoint an admin configured for the task, and returns its JSON.

The endpoint is never chosen by the model: it comes from the task spec's tool config::

    tools:
      - name: http_json
        usage_description: Looks up the customer's account status.
        config:
          url: https://crm.example.com/api/status     # the only URL called
          method: GET                                 # GET (params in the query string) or POST (JSON body)
          allowed_hosts: [crm.example.com]            # the URL's host must be listed
          timeout_s: 5                                # optional, default 5
          max_bytes: 65536                            # optional, response size limit, default 64 KiB

Redirects are not followed (a redirect could leave the allow-list).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from mojodex_core.tools.base import Tool, ToolContext, ToolError
from mojodex_core.tools.registry import register

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_MAX_BYTES = 64 * 1024


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001, ANN201, PLR0913
        raise ToolError(f"the endpoint answered a redirect ({code}); redirects are not followed")


_OPENER = urllib.request.build_opener(_NoRedirect)


class HttpJsonTool(Tool):
    name = "http_json"
    description = "Calls the task's configured web service with parameters and returns its JSON answer."
    query_schema = {
        "type": "object",
        "properties": {
            "params": {
                "type": "object",
                "description": "Parameters sent to the service.",
                "additionalProperties": {"type": ["string", "number", "integer", "boolean"]},
            }
        },
        "additionalProperties": False,
    }

    def run(self, query: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        config = context.config
        url = config.get("url")
        if not isinstance(url, str) or not url:
            raise ToolError("http_json has no url configured for this task")
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https"):
            raise ToolError("http_json only calls http or https URLs")
        allowed = [str(h).lower() for h in config.get("allowed_hosts") or []]
        host = (parsed.hostname or "").lower()
        if host not in allowed:
            raise ToolError(f"host {host!r} is not in the tool's allowed_hosts")
        method = str(config.get("method") or "GET").upper()
        if method not in ("GET", "POST"):
            raise ToolError("http_json method must be GET or POST")
        timeout = float(config.get("timeout_s") or min(DEFAULT_TIMEOUT_S, context.timeout_s))
        max_bytes = int(config.get("max_bytes") or DEFAULT_MAX_BYTES)
        params = query.get("params") or {}
        data = None
        headers = {"Accept": "application/json", "User-Agent": "mojodex-http-json-tool"}
        if method == "GET":
            if params:
                separator = "&" if parsed.query else "?"
                url = url + separator + urllib.parse.urlencode({k: str(v) for k, v in params.items()})
        else:
            data = json.dumps(params).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with _OPENER.open(request, timeout=timeout) as response:
                body = response.read(max_bytes + 1)
                status = response.status
        except urllib.error.HTTPError as exc:
            raise ToolError(f"the endpoint answered HTTP {exc.code}") from None
        except TimeoutError:
            raise ToolError(f"the endpoint did not answer within {timeout:g} s") from None
        except urllib.error.URLError as exc:
            raise ToolError(f"the endpoint could not be reached: {exc.reason}") from None
        if len(body) > max_bytes:
            raise ToolError(f"the response is larger than {max_bytes} bytes")
        try:
            value = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise ToolError("the endpoint did not answer JSON") from None
        return {"status": status, "data": value}


register(HttpJsonTool())
