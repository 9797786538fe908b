"""Tools by name."""

from __future__ import annotations

import threading

from mojodex_core.tools.base import Tool

_TOOLS: dict[str, Tool] = {}
_LOCK = threading.Lock()


def register(tool: Tool) -> Tool:
    if not tool.name:
        raise ValueError("a tool needs a name")
    with _LOCK:
        _TOOLS[tool.name] = tool
    return tool


def unregister(name: str) -> None:
    with _LOCK:
        _TOOLS.pop(name, None)


def get_tool(name: str) -> Tool | None:
    with _LOCK:
        return _TOOLS.get(name)


def registered_names() -> list[str]:
    with _LOCK:
        return sorted(_TOOLS)
