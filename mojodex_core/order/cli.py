"""``mojodex order ...`` commands (a click group; attached to the top-level CLI by the lead)."""

from __future__ import annotations

import sys

import click

from .menu import MenuError, load_menu
from .parser import parse_deterministic


@click.group("order")
def order() -> None:
    """Order-capture engine tools."""


@order.command("parse")
@click.option("--menu", "menu_path", required=True, help="Path to a menu JSON (tasks_config/menus/*.json).")
@click.option("--exr", is_flag=True, help="Also print the PIZZA-dataset EXR notation (menus with exr tags).")
@click.argument("text")
def parse_cmd(menu_path: str, exr: bool, text: str) -> None:
    """Parse TEXT with the deterministic parser and print the ParsedInput as JSON."""
    try:
        menu = load_menu(menu_path)
    except MenuError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(2)
    parsed = parse_deterministic(text, menu)
    click.echo(parsed.model_dump_json(indent=2))
    if exr:
        from .exr import to_exr

        click.echo(to_exr(parsed, menu))


def main() -> None:  # pragma: no cover - convenience entry point
    order()
