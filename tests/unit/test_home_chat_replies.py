"""The home chat's own texts: resource files per language, with the en fallback."""

from __future__ import annotations

import json

import pytest

from mojodex_core.home_chat.replies import home_chat_reply


def test_the_text_is_the_user_language_s_else_english(tmp_path):
    folder = tmp_path / "home_chat"
    folder.mkdir()
    (folder / "en.json").write_text(json.dumps({"a": "Start {task} from its page.", "b": "Only in English."}))
    (folder / "fr.json").write_text(json.dumps({"a": "Lancez {task} depuis sa page."}))
    assert home_chat_reply("fr", "a", tasks_config_dir=tmp_path, task="Poème") == "Lancez Poème depuis sa page."
    assert home_chat_reply("fr-CA", "a", tasks_config_dir=tmp_path, task="X") == "Lancez X depuis sa page."
    assert home_chat_reply("fr", "b", tasks_config_dir=tmp_path) == "Only in English."  # a key missing in fr
    assert home_chat_reply("de", "a", tasks_config_dir=tmp_path, task="X") == "Start X from its page."
    assert home_chat_reply(None, "b", tasks_config_dir=tmp_path) == "Only in English."
    with pytest.raises(KeyError):
        home_chat_reply("en", "missing", tasks_config_dir=tmp_path)


@pytest.mark.parametrize("language", ["en", "fr"])
def test_the_shipped_files_have_every_text_with_its_placeholders(language):
    for key in ("not_your_task", "start_from_its_page", "task_unavailable"):
        text = home_chat_reply(language, key, task="Pizzeria order")
        assert text and "{" not in text
    assert "Pizzeria order" in home_chat_reply(language, "start_from_its_page", task="Pizzeria order")


def test_a_language_that_is_not_a_code_reads_english_never_a_path(tmp_path):
    folder = tmp_path / "home_chat"
    folder.mkdir()
    (folder / "en.json").write_text(json.dumps({"a": "English."}))
    (tmp_path / "leak.json").write_text(json.dumps({"a": "LEAKED"}))
    assert home_chat_reply("../leak", "a", tasks_config_dir=tmp_path) == "English."
