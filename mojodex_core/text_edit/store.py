"""Text edit actions in the database: upsert from specs, find the files, list those that apply."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import TextEditAction, TextEditActionTextType, TextType
from mojodex_core.task_view import pick_entry
from mojodex_core.text_edit.spec import TextEditActionSpec

FOLDER = "text_edit_actions"


def text_edit_action_files(paths: list[Path]) -> list[Path]:
    """Files of ``text_edit_actions/`` folders: inside a folder given, or the folder itself, or named."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            folder = path if path.name == FOLDER else path / FOLDER
            if folder.is_dir():
                files.extend(sorted(p for p in folder.glob("*.json") if p.is_file()))
        elif path.parent.name == FOLDER:
            files.append(path)
    return files


def store_text_edit_action(db: DbSession, spec: TextEditActionSpec) -> tuple[TextEditAction, bool]:
    """Upsert by name; the text types it applies to are replaced by the spec's. Returns (row, created)."""
    action = db.scalar(select(TextEditAction).where(TextEditAction.name == spec.name))
    created = action is None
    if created:
        action = TextEditAction(name=spec.name)
        db.add(action)
    action.emoji = spec.emoji
    action.instruction = spec.prompt_template
    action.displayed_data = [d.model_dump(mode="json") for d in spec.displayed_data]
    db.flush()
    wanted = set()
    for name in spec.output_types:
        text_type = db.scalar(select(TextType).where(TextType.name == name))
        if text_type is None:
            text_type = TextType(name=name)
            db.add(text_type)
            db.flush()
        wanted.add(text_type.text_type_pk)
    links = select(TextEditActionTextType).where(
        TextEditActionTextType.text_edit_action_fk == action.text_edit_action_pk
    )
    current = {row.text_type_fk: row for row in db.scalars(links)}
    for text_type_pk in wanted - current.keys():
        db.add(TextEditActionTextType(text_edit_action_fk=action.text_edit_action_pk, text_type_fk=text_type_pk))
    for text_type_pk in current.keys() - wanted:
        db.delete(current[text_type_pk])
    db.flush()
    return action, created


def action_view(action: TextEditAction, language: str | None) -> dict[str, Any]:
    entry = pick_entry(action.displayed_data or [], language) or {}
    return {
        "text_edit_action_pk": action.text_edit_action_pk,
        "name": entry.get("name", action.name),
        "description": entry.get("description", ""),
        "emoji": action.emoji,
        "name_for_system": action.name,
    }


def actions_for_text_type(db: DbSession, text_type_fk: int | None, language: str | None) -> list[dict[str, Any]]:
    """The actions that apply to a text type, in the user's language (none for an untyped text)."""
    if text_type_fk is None:
        return []
    rows = db.scalars(
        select(TextEditAction)
        .join(TextEditActionTextType, TextEditActionTextType.text_edit_action_fk == TextEditAction.text_edit_action_pk)
        .where(TextEditActionTextType.text_type_fk == text_type_fk)
        .order_by(TextEditAction.text_edit_action_pk)
    )
    return [action_view(action, language) for action in rows]


def applies_to(db: DbSession, text_edit_action_pk: int, text_type_fk: int | None) -> bool:
    if text_type_fk is None:
        return False
    return db.get(TextEditActionTextType, (text_edit_action_pk, text_type_fk)) is not None
