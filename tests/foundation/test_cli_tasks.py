"""`mojodex tasks load PATH...`: upsert by name_for_system, one transaction per file, exit 2 on a bad spec."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from mojodex_core.db import make_engine, make_session_factory
from mojodex_core.db.models import Platform, Task, TaskPlatform
from tests.foundation.conftest import (
    REPO_ROOT,
    SHARED_SPECS,
    clean_env,
    follow_up,
    needs_shared_specs,
    run_mojodex,
    unique,
    valid_spec,
)

TASKS_CONFIG = REPO_ROOT / "tasks_config"


@pytest.fixture(scope="module")
def factory(database_url):
    engine = make_engine(database_url)
    yield make_session_factory(engine)
    engine.dispose()


def stored(factory, name: str) -> Task | None:
    with factory() as db:
        task = db.scalar(select(Task).where(Task.name_for_system == name))
        if task is not None:
            task.displayed_data  # noqa: B018 - load before the session closes
        return task


def platforms_of(factory, name: str) -> set[str]:
    with factory() as db:
        return set(
            db.scalars(
                select(Platform.name)
                .join(TaskPlatform, TaskPlatform.platform_fk == Platform.platform_pk)
                .join(Task, Task.task_pk == TaskPlatform.task_fk)
                .where(Task.name_for_system == name)
            )
        )


def write(path, data) -> None:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


def test_loads_the_tasks_config_folder_and_is_an_upsert(cli, factory):
    specs = {json.loads(p.read_text())["name_for_system"]: p for p in sorted(TASKS_CONFIG.glob("*.json"))}
    assert len(specs) >= 6
    first = cli("tasks", "load", TASKS_CONFIG)
    assert first.exit_code == 0, first.output
    assert first.stderr == ""
    for name in specs:
        task = stored(factory, name)
        assert task is not None, f"{name} not stored"
        assert "en" in [d.language_code for d in task.displayed_data]
    orders = [n for n, p in specs.items() if json.loads(p.read_text()).get("task_type") == "order"]
    assert orders, "tasks_config has order specs"
    for name in orders:
        task = stored(factory, name)
        assert task.type == "order" and task.menu and task.menu.startswith("menus/")

    again = cli("tasks", "load", TASKS_CONFIG)
    assert again.exit_code == 0, again.output
    assert all(line.startswith("updated ") for line in again.stdout.splitlines())
    with factory() as db:
        for name in specs:
            assert len(list(db.scalars(select(Task).where(Task.name_for_system == name)))) == 1


def test_the_installed_console_script_loads_a_spec_file(database_url, tmp_path, factory):
    name = unique("console")
    write(tmp_path / "spec.json", valid_spec(name))
    proc = run_mojodex(["tasks", "load", str(tmp_path / "spec.json")], clean_env(DATABASE_URL=database_url))
    assert proc.returncode == 0, proc.stderr
    assert f"created {name} (instruct)" in proc.stdout
    assert stored(factory, name) is not None


def test_a_bad_spec_exits_2_naming_path_and_rule_and_the_good_files_are_stored(cli, factory, tmp_path):
    good_a, good_b, bad_name = unique("good_a"), unique("good_b"), unique("bad")
    write(tmp_path / "a_good.json", valid_spec(good_a))
    bad = valid_spec(bad_name, platforms=["desktop"])
    del bad["final_instruction"]
    bad["task_displayed_data"][0]["json_input"][1].pop("possible_values")
    write(tmp_path / "b_bad.json", bad)
    (tmp_path / "c_broken.json").write_text('{"name_for_system": ', encoding="utf-8")
    write(tmp_path / "d_good.json", valid_spec(good_b))

    result = cli("tasks", "load", tmp_path)
    assert result.exit_code == 2
    errors = result.stderr
    bad_file = tmp_path / "b_bad.json"
    assert f"{bad_file}: platforms[0]: must be one of: webapp, mobile" in errors
    assert f"{bad_file}: final_instruction: is required" in errors
    assert (
        f"{bad_file}: task_displayed_data[0].json_input[1].possible_values: "
        "is required when type is 'drop_down_list'"
    ) in errors
    assert f"{tmp_path / 'c_broken.json'}: <file>: not valid JSON" in errors
    assert "2 spec file(s) rejected" in errors
    assert stored(factory, bad_name) is None
    assert stored(factory, good_a) is not None and stored(factory, good_b) is not None
    assert f"created {good_a}" in result.stdout and f"created {good_b}" in result.stdout


def test_predefined_actions_are_checked_against_the_whole_set_and_the_database(cli, factory, tmp_path):
    stored_before, later = unique("stored"), unique("later")
    write(tmp_path / "before.json", valid_spec(stored_before))
    assert cli("tasks", "load", tmp_path / "before.json").exit_code == 0
    folder = tmp_path / "set"
    folder.mkdir()
    # a_first names a task of a file loaded after it, and one already stored: both fine.
    first = unique("first")
    write(folder / "a_first.json", valid_spec(first, predefined_actions=[follow_up(later), follow_up(stored_before)]))
    write(folder / "z_later.json", valid_spec(later))
    # b_dangling names no task; c_on_bad names the task of a file that is rejected.
    dangling, on_bad, bad = unique("dangling"), unique("on_bad"), unique("bad")
    nowhere = unique("nowhere")
    write(folder / "b_dangling.json", valid_spec(dangling, predefined_actions=[follow_up(nowhere)]))
    write(folder / "c_on_bad.json", valid_spec(on_bad, predefined_actions=[follow_up(bad)]))
    write(folder / "d_bad.json", valid_spec(bad, icon="not an emoji"))

    result = cli("tasks", "load", folder)
    assert result.exit_code == 2
    assert f"{folder / 'b_dangling.json'}: predefined_actions[0].task_name: no task named '{nowhere}'" in result.stderr
    assert f"{folder / 'c_on_bad.json'}: predefined_actions[0].task_name: no task named '{bad}'" in result.stderr
    assert "3 spec file(s) rejected" in result.stderr
    assert stored(factory, dangling) is None and stored(factory, on_bad) is None and stored(factory, bad) is None
    assert stored(factory, first) is not None and stored(factory, later) is not None
    assert f"created {first}" in result.stdout and f"created {later}" in result.stdout


def test_a_file_naming_a_task_of_a_file_the_set_check_rejects_is_rejected(cli, factory, tmp_path):
    # a.json names b.json's task; b.json names no task: b.json is rejected, so a.json would name nothing.
    first, second, nowhere = unique("aa"), unique("bb"), unique("nowhere")
    write(tmp_path / "a.json", valid_spec(first, predefined_actions=[follow_up(second)]))
    write(tmp_path / "b.json", valid_spec(second, predefined_actions=[follow_up(nowhere)]))
    result = cli("tasks", "load", tmp_path)
    assert result.exit_code == 2
    assert f"{tmp_path / 'b.json'}: predefined_actions[0].task_name: no task named '{nowhere}'" in result.stderr
    assert f"{tmp_path / 'a.json'}: predefined_actions[0].task_name: no task named '{second}'" in result.stderr
    assert "2 spec file(s) rejected" in result.stderr
    assert stored(factory, first) is None and stored(factory, second) is None


def test_a_file_may_name_a_stored_task_whose_new_version_is_rejected(cli, factory, tmp_path):
    second = unique("bb")
    write(tmp_path / "b.json", valid_spec(second))
    assert cli("tasks", "load", tmp_path / "b.json").exit_code == 0
    first, nowhere = unique("aa"), unique("nowhere")
    write(tmp_path / "a.json", valid_spec(first, predefined_actions=[follow_up(second)]))
    write(tmp_path / "b.json", valid_spec(second, predefined_actions=[follow_up(nowhere)]))
    result = cli("tasks", "load", tmp_path)
    assert result.exit_code == 2 and "1 spec file(s) rejected" in result.stderr
    assert f"created {first}" in result.stdout
    assert stored(factory, second).spec.get("predefined_actions", []) == []


@pytest.mark.parametrize("order", ["ab", "ba"])
def test_every_file_of_a_set_sharing_a_name_is_refused_whatever_the_order(cli, factory, tmp_path, order):
    name, caller = unique("twice"), unique("caller")
    write(tmp_path / "before.json", valid_spec(name))
    assert cli("tasks", "load", tmp_path / "before.json").exit_code == 0
    folder = tmp_path / "set"
    folder.mkdir()
    files = {"a": folder / "a.json", "b": folder / "b.json"}
    write(files["a"], valid_spec(name, icon="📧"))
    write(files["b"], valid_spec(name, icon="📝"))
    # c.json names the shared name: a stored task, so c.json is fine.
    write(folder / "c.json", valid_spec(caller, predefined_actions=[follow_up(name)]))
    result = cli("tasks", "load", *(files[key] for key in order), folder / "c.json")
    assert result.exit_code == 2
    assert f"{files['a']}: name_for_system: duplicate name_for_system '{name}' (also in {files['b']})" in result.stderr
    assert f"{files['b']}: name_for_system: duplicate name_for_system '{name}' (also in {files['a']})" in result.stderr
    assert "2 spec file(s) rejected" in result.stderr
    assert stored(factory, name).icon == "✉️"  # neither file: the stored task is unchanged
    assert f"created {caller}" in result.stdout


def test_a_file_given_twice_is_loaded_once(cli, factory, tmp_path):
    name = unique("once")
    write(tmp_path / "a.json", valid_spec(name))
    result = cli("tasks", "load", tmp_path, tmp_path / "a.json", tmp_path / "." / "a.json")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count(f"created {name}") == 1 and "updated" not in result.stdout


def test_a_rejected_update_leaves_the_stored_task_unchanged(cli, factory, tmp_path):
    name = unique("keep")
    path = tmp_path / "spec.json"
    write(path, valid_spec(name))
    assert cli("tasks", "load", path).exit_code == 0
    broken = valid_spec(name, icon="not an emoji", platforms=["webapp"])
    broken["task_displayed_data"][0]["name_for_user"] = "Renamed"
    write(path, broken)
    result = cli("tasks", "load", path)
    assert result.exit_code == 2
    assert f"{path}: icon: must be an emoji" in result.stderr
    task = stored(factory, name)
    assert task.icon == "✉️"
    assert {d.name_for_user for d in task.displayed_data} == {"Email", "E-mail"}
    assert platforms_of(factory, name) == {"webapp", "mobile"}


def test_an_order_spec_with_a_missing_menu_is_rejected(cli, factory, tmp_path):
    name = unique("order")
    spec = json.loads((TASKS_CONFIG / "order_pizzeria.json").read_text())
    spec["name_for_system"] = name
    write(tmp_path / "order.json", spec)  # no menus/ next to it
    result = cli("tasks", "load", tmp_path / "order.json")
    assert result.exit_code == 2
    assert f"{tmp_path / 'order.json'}: menu: menu file not found: menus/pizzeria.json" in result.stderr
    assert stored(factory, name) is None
    # Resolved against --tasks-config-dir, the same spec loads.
    ok = cli("tasks", "load", tmp_path / "order.json", "--tasks-config-dir", TASKS_CONFIG)
    assert ok.exit_code == 0, ok.output
    assert stored(factory, name).menu == "menus/pizzeria.json"


def test_a_spec_file_saved_with_a_utf8_bom_loads(cli, factory, tmp_path):
    name = unique("bom")
    (tmp_path / "bom.json").write_text(json.dumps(valid_spec(name), ensure_ascii=False), encoding="utf-8-sig")
    result = cli("tasks", "load", tmp_path / "bom.json")
    assert result.exit_code == 0, result.output
    assert stored(factory, name) is not None


def test_a_missing_path_is_a_usage_error(cli, tmp_path):
    result = cli("tasks", "load", tmp_path / "nope.json")
    assert result.exit_code == 2
    assert "does not exist" in result.stderr


# --- the real Mojodex specs of ../shared


def shared_spec_files():
    return (
        sorted(p for p in SHARED_SPECS.glob("*.json") if p.name != "task_spec.json")
        if SHARED_SPECS.is_dir()
        else []
    )


@needs_shared_specs
def test_the_shared_mojodex_specs_load_unchanged_via_the_cli(cli, factory):
    files = shared_spec_files()
    assert len(files) >= 4
    result = cli("tasks", "load", *files)
    assert result.exit_code == 0, result.output
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        task = stored(factory, data["name_for_system"])
        assert task is not None, path.name
        assert task.type == data.get("task_type", "instruct")
        assert {d.language_code for d in task.displayed_data} == {
            d["language_code"] for d in data["task_displayed_data"]
        }
        assert platforms_of(factory, data["name_for_system"]) == set(data["platforms"])


@needs_shared_specs
def test_the_shared_template_is_rejected_and_nothing_is_stored(cli, factory):
    with factory() as db:
        before = set(db.scalars(select(Task.name_for_system)))
    template = SHARED_SPECS / "task_spec.json"
    result = cli("tasks", "load", template)
    assert result.exit_code == 2
    assert (
        f"{template}: name_for_system: must be filled in: '<SYSTEM TASK NAME>' is a template placeholder"
        in (result.stderr)
    )
    assert f"{template}: icon: must be filled in" in result.stderr
    # task_type, platforms and result_chat_enabled are real values in the template: not reported.
    assert f"{template}: platforms" not in result.stderr
    assert f"{template}: task_type" not in result.stderr
    with factory() as db:
        assert set(db.scalars(select(Task.name_for_system))) == before


@needs_shared_specs
def test_loading_the_shared_folder_stores_the_good_specs_and_exits_2_for_the_template(cli, factory):
    result = cli("tasks", "load", SHARED_SPECS)
    assert result.exit_code == 2
    assert "1 spec file(s) rejected" in result.stderr
    for path in shared_spec_files():
        assert stored(factory, json.loads(path.read_text())["name_for_system"]) is not None
