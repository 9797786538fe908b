"""`mojodex tasks load` also loads text edit actions from text_edit_actions/ folders."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from mojodex_core.db import make_engine, make_session_factory
from mojodex_core.db.models import TextEditAction, TextEditActionTextType, TextType
from tests.foundation.conftest import REPO_ROOT, unique

ACTIONS = REPO_ROOT / "tasks_config" / "text_edit_actions"


@pytest.fixture(scope="module")
def factory(database_url):
    engine = make_engine(database_url)
    yield make_session_factory(engine)
    engine.dispose()


def _types_of(factory, name: str) -> set[str]:
    with factory() as db:
        return set(db.scalars(
            select(TextType.name)
            .join(TextEditActionTextType, TextEditActionTextType.text_type_fk == TextType.text_type_pk)
            .join(TextEditAction, TextEditAction.text_edit_action_pk == TextEditActionTextType.text_edit_action_fk)
            .where(TextEditAction.name == name)
        ))


def test_the_tasks_config_folder_loads_the_shipped_actions_as_an_upsert(cli, factory):
    first = cli("tasks", "load", REPO_ROOT / "tasks_config")
    assert first.exit_code == 0, first.output
    for name in ("shorter", "more_formal", "more_casual", "translate"):
        assert f"text edit action {name} from" in first.stdout
    again = cli("tasks", "load", ACTIONS)
    assert again.exit_code == 0 and all(line.startswith("updated ") for line in again.stdout.splitlines())
    assert _types_of(factory, "shorter") == {"email", "linkedin_post", "meeting_minutes"}
    with factory() as db:
        assert len(list(db.scalars(select(TextEditAction).where(TextEditAction.name == "shorter")))) == 1


def test_a_bad_action_exits_2_and_a_changed_one_replaces_its_types(cli, factory, tmp_path):
    folder = tmp_path / "text_edit_actions"
    folder.mkdir()
    name = unique("edit").lower()
    good = json.loads((ACTIONS / "shorter.json").read_text())
    good.update(name=name, output_types=["email", "memo"])
    (folder / "a.json").write_text(json.dumps(good))
    (folder / "b.json").write_text(json.dumps({**good, "name": name + "_bad", "prompt_template": "{{ nope }}"}))
    result = cli("tasks", "load", tmp_path)
    assert result.exit_code == 2
    assert f"{folder / 'b.json'}: prompt_template: template failed to render" in result.stderr
    assert _types_of(factory, name) == {"email", "memo"}
    good["output_types"] = ["memo"]
    (folder / "b.json").unlink()
    (folder / "a.json").write_text(json.dumps(good))
    assert cli("tasks", "load", folder / "a.json").exit_code == 0
    assert _types_of(factory, name) == {"memo"}
