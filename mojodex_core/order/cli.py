"""``mojodex order ...`` commands (a click group; attached to the top-level CLI by the lead)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

import click

from .menu import MenuError, load_menu

if TYPE_CHECKING:
    from mojodex_core.llm import LLMSettings

NO_LLM = "no LLM configured (set MOJODEX_LLM_BASE_URL, or MOJODEX_LLM_API_KEY / OPENAI_API_KEY)"


@click.group("order")
def order() -> None:
    """Order-capture engine tools."""


def llm_settings_from_env(env: Mapping[str, str] | None = None) -> LLMSettings | None:
    """``LLMSettings`` from MOJODEX_LLM_BASE_URL, MOJODEX_LLM_API_KEY (or OPENAI_API_KEY) and
    MOJODEX_LLM_MODEL; ``None`` when neither an endpoint nor a key is set.

    Deliberately lighter than ``mojodex_core.config.load_settings()``, which also insists on
    the server's secrets: parsing one message needs only the model endpoint.
    """
    from mojodex_core.llm import LLMSettings

    env = os.environ if env is None else env
    base_url = (env.get("MOJODEX_LLM_BASE_URL") or "").strip() or None
    api_key = (env.get("MOJODEX_LLM_API_KEY") or env.get("OPENAI_API_KEY") or "").strip() or None
    if base_url is None and api_key is None:
        return None
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise click.UsageError(f"MOJODEX_LLM_BASE_URL must be an http(s) URL, got {base_url!r}")
    model = (env.get("MOJODEX_LLM_MODEL") or "").strip() or "gpt-4o-mini"
    return LLMSettings(base_url=base_url, api_key=api_key, model=model)


def _fail(message: str, code: int) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


@order.command("parse")
@click.option("--menu", "menu_path", required=True, help="Path to a menu JSON (tasks_config/menus/*.json).")
@click.option(
    "--mode",
    type=click.Choice(["deterministic", "auto", "llm"]),
    default="deterministic",
    show_default=True,
    help="auto: deterministic, then the LLM when unsure; llm: the LLM only (both need MOJODEX_LLM_* settings).",
)
@click.option("--exr", is_flag=True, help="Also print the PIZZA-dataset EXR notation (menus with exr tags).")
@click.argument("text")
def parse_cmd(menu_path: str, mode: str, exr: bool, text: str) -> None:
    """Parse TEXT and print the ParsedInput as JSON."""
    from .llm_parser import parse_order
    from .parsed_input import OrderParseError

    try:
        menu = load_menu(menu_path)
    except MenuError as exc:
        _fail(str(exc), 2)
    provider = None
    failures: tuple[type[Exception], ...] = (OrderParseError,)
    if mode != "deterministic":
        try:
            settings = llm_settings_from_env()
        except click.UsageError as exc:
            _fail(exc.message, 2)
        if settings is None:
            _fail(NO_LLM, 2)
        from mojodex_core.llm import LLMError, LLMProvider

        provider = LLMProvider(settings)
        failures = (OrderParseError, LLMError)
    try:
        parsed = parse_order(text, menu, mode=mode, llm=provider)  # type: ignore[arg-type]
    except failures as exc:
        _fail(str(exc).splitlines()[0], 1)
    finally:
        if provider is not None:
            provider.close()
    click.echo(parsed.model_dump_json(indent=2))
    if exr:
        from .exr import to_exr

        click.echo(to_exr(parsed, menu))


def main() -> None:  # pragma: no cover - convenience entry point
    order()
