"""The audio folder's registry of databases: the sweep deletes only in a folder of one database."""

from __future__ import annotations

import os
import threading
import time

from mojodex_core.audio.databases import REGISTRY, may_sweep, register, registered, sweep_refusal
from mojodex_core.audio.orphans import sweep_orphans
from mojodex_core.audio.store import AudioStore

HOUR = 3600.0


def _old_orphan(folder) -> str:  # noqa: ANN001
    name = AudioStore.new_name("s", "m", "wav")
    AudioStore(folder).save(name, b"x")
    old = time.time() - 2 * HOUR
    os.utime(folder / name, (old, old))
    return name


def _sweep_if_alone(folder, key: str) -> int:  # noqa: ANN001 - as Platform.sweep_audio_orphans does
    if not may_sweep(folder, key):
        return 0
    return sweep_orphans(AudioStore(folder), lambda _names: set(), grace_s=HOUR).deleted


def test_a_key_is_listed_once_however_often_its_platform_starts(tmp_path):
    folder = tmp_path / "audio"
    assert register(folder, "aaa") and register(folder, "aaa") and register(folder, "bbb")
    assert registered(folder) == ["aaa", "bbb"]
    assert (folder / REGISTRY).read_text() == "aaa\nbbb\n"
    assert registered(tmp_path / "none") == []


def test_platforms_starting_together_lose_no_key(tmp_path):
    folder = tmp_path / "audio"
    keys = [f"k{i}" for i in range(16)]
    threads = [threading.Thread(target=register, args=(folder, key)) for key in keys]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(registered(folder)) == sorted(keys)


def test_the_folder_of_one_database_is_swept(tmp_path):
    folder = tmp_path / "audio"
    register(folder, "aaa")
    _old_orphan(folder)
    assert sweep_refusal(["aaa"], "aaa") is None
    assert _sweep_if_alone(folder, "aaa") == 1
    assert os.listdir(folder) == [REGISTRY]


def test_a_folder_two_databases_use_is_not_swept_and_the_log_says_why(tmp_path, caplog):
    # was: database B's start-up sweep deleted database A's recordings (no row of B names them)
    folder = tmp_path / "audio"
    register(folder, "aaa")
    register(folder, "bbb")
    orphan = _old_orphan(folder)
    with caplog.at_level("INFO", logger="mojodex.audio"):
        assert _sweep_if_alone(folder, "bbb") == 0
    assert orphan in os.listdir(folder)
    [line] = [r.getMessage() for r in caplog.records]
    assert "nothing deleted" in line and "2 databases use this folder" in line and "var dir per database" in line


def test_a_database_the_registry_does_not_list_sweeps_nothing(tmp_path, caplog):
    # its own registration failed, or the registry was removed meanwhile
    folder = tmp_path / "audio"
    orphan = _old_orphan(folder)
    with caplog.at_level("INFO", logger="mojodex.audio"):
        assert _sweep_if_alone(folder, "aaa") == 0
    register(folder, "bbb")
    assert _sweep_if_alone(folder, "aaa") == 0
    assert orphan in os.listdir(folder)
    assert all("nothing deleted" in r.getMessage() for r in caplog.records)


def test_a_registry_that_cannot_be_read_deletes_nothing(tmp_path, caplog):
    folder = tmp_path / "audio"
    orphan = _old_orphan(folder)
    (folder / REGISTRY).mkdir()  # not a file: reading it fails
    with caplog.at_level("INFO", logger="mojodex.audio"):
        assert not register(folder, "aaa")
        assert _sweep_if_alone(folder, "aaa") == 0
    assert orphan in os.listdir(folder)
    assert any("could not read" in r.getMessage() and "nothing deleted" in r.getMessage() for r in caplog.records)
    (folder / REGISTRY).rmdir()
    (folder / REGISTRY).write_bytes(b"aaa\n\xff\xfe\n")  # not text
    assert _sweep_if_alone(folder, "aaa") == 0
    assert orphan in os.listdir(folder)


def test_a_folder_holding_uploads_before_its_registry_is_not_swept_until_an_operator_says_whose(tmp_path, caplog):
    # A var dir shared by two databases before the registry existed: the first platform to start on this
    # version would otherwise register alone and delete the other database's older recordings.
    folder = tmp_path / "audio"
    theirs = _old_orphan(folder)
    assert register(folder, "aaa")
    assert registered(folder) == ["unknown", "aaa"]
    assert _sweep_if_alone(folder, "aaa") == 0 and (folder / theirs).exists()
    assert "held uploads before its .databases existed" in caplog.text
    (folder / REGISTRY).write_text("aaa\n")  # the operator knows the folder is this database's
    assert _sweep_if_alone(folder, "aaa") == 1 and not (folder / theirs).exists()


def test_a_registry_created_in_an_empty_folder_lists_only_its_database(tmp_path):
    folder = tmp_path / "audio"
    (folder).mkdir()
    (folder / "voice_note.txt").write_text("not an upload")
    assert register(folder, "aaa") and registered(folder) == ["aaa"]
