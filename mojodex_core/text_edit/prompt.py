"""Rendering an action's Jinja2 template, and the messages sent to the model for one edit.

Templates come from admins' files: they render in a sandbox with strict undefined variables,
so a typo is caught when the file is loaded, not when a user clicks the action.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from mojodex_core.execution.prompt import PromptError, render

# What an action's template may use.
TEMPLATE_VARIABLES = ("title", "draft", "language", "text_type", "username")
_SAMPLE = {
    "title": "Sample title",
    "draft": "Sample text.",
    "language": "en",
    "text_type": "email",
    "username": "Sam",
}


class TemplateProblem(ValueError):
    """The template does not compile or uses an unknown variable."""


@lru_cache(maxsize=1)
def _sandbox() -> SandboxedEnvironment:
    return SandboxedEnvironment(undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, autoescape=False)


def render_instruction(template: str, **variables: Any) -> str:
    try:
        text = _sandbox().from_string(template).render(**variables).strip()
    except TemplateError as exc:
        raise TemplateProblem(f"template failed to render: {exc}") from exc
    if not text:
        raise TemplateProblem("template rendered empty")
    return text


def check_template(template: str) -> None:
    render_instruction(template, **_SAMPLE)


def edit_messages(
    template: str, *, title: str, draft: str, language: str, text_type: str | None, username: str
) -> list[dict[str, str]]:
    """System prompt (the text, the format) and the action's instruction as the user turn."""
    variables = {"title": title, "draft": draft, "language": language, "text_type": text_type or "text",
                 "username": username}
    try:
        instruction = render_instruction(template, **variables)
    except TemplateProblem as exc:
        raise PromptError(str(exc)) from exc
    system = render("text_edit_action.jinja2", **variables)
    return [{"role": "system", "content": system}, {"role": "user", "content": instruction}]
