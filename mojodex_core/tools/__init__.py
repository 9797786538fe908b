"""Tools an instruct task may use: one module per tool, registered by name.

A tool is a small class (see ``base.Tool``): a ``name``, a JSON schema of its query and
``run(query, context) -> dict``. Adding a tool is one file in this package that calls
``register(MyTool())`` (built-ins are imported below), or one ``register`` call anywhere
before the task runs.
"""

from mojodex_core.tools.base import Tool, ToolContext, ToolError
from mojodex_core.tools.registry import get_tool, register, registered_names, unregister

# Built-in tools register themselves on import.
from mojodex_core.tools import http_json, internal_memory  # noqa: E402,F401  isort: skip

__all__ = ["Tool", "ToolContext", "ToolError", "get_tool", "register", "registered_names", "unregister"]
