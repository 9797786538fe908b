"""Platforms of two databases sharing one var dir: neither's start-up deletes the other's recordings."""

from __future__ import annotations

import dataclasses
import os
import time

from backend.context import build_platform
from mojodex_core.audio.store import AudioStore
from mojodex_core.db import transaction
from mojodex_core.db.migrate import upgrade
from mojodex_core.db.models import Message
from tests.support.live import live_settings
from tests.unit._rows import session_row


def _recording(platform) -> str:  # noqa: ANN001 - an answered audio message, hours old, with its file
    with transaction(platform.session_factory) as db:
        session_id = session_row(db)
        db.flush()
        name = AudioStore.new_name(session_id, "m1", "wav")
        db.add(Message(session_id=session_id, sender="user", message_id="m1", event_name="user_message",
                       text="spoken", status="answered",
                       data={"audio": {"file": name, "mime": "audio/wav", "transcription": "done"}}))
    platform.audio_store.save(name, b"RIFF....WAVE")
    old = time.time() - 2 * 3600
    os.utime(platform.audio_store.directory / name, (old, old))
    return name


def test_a_platform_of_another_database_sharing_var_does_not_delete_this_databases_uploads(tmp_path, caplog):
    # was: database B's start-up sweep deleted database A's recording (no row of B names it)
    var = tmp_path / "var"
    url_a, url_b = f"sqlite:///{tmp_path}/a.db", f"sqlite:///{tmp_path}/b.db"
    upgrade(url_a)
    upgrade(url_b)
    platform_a = build_platform(dataclasses.replace(live_settings(url_a, None), var_dir=var))
    try:
        name = _recording(platform_a)
    finally:
        platform_a.close()

    platform_b = build_platform(dataclasses.replace(live_settings(url_b, None), var_dir=var))
    try:
        assert platform_b.audio_store.directory == platform_a.audio_store.directory  # one flat folder
        with caplog.at_level("INFO", logger="mojodex.audio"):
            assert platform_b.sweep_audio_orphans() == 0
    finally:
        platform_b.close()
    assert (platform_a.audio_store.directory / name).exists(), "B's start-up deleted A's recording"
    assert any("2 databases use this folder" in r.getMessage() for r in caplog.records)

    # and A, started again, still reads it
    platform_a = build_platform(dataclasses.replace(live_settings(url_a, None), var_dir=var))
    try:
        assert platform_a.audio_store.read(name) == b"RIFF....WAVE"
        assert platform_a.sweep_audio_orphans() == 0
    finally:
        platform_a.close()
    assert (platform_a.audio_store.directory / name).exists()


def test_the_folder_of_one_database_is_still_swept(tmp_path):
    var = tmp_path / "var"
    url = f"sqlite:///{tmp_path}/a.db"
    upgrade(url)
    platform = build_platform(dataclasses.replace(live_settings(url, None), var_dir=var))
    try:
        name = _recording(platform)
        orphan = AudioStore.new_name("s", "gone", "wav")
        platform.audio_store.save(orphan, b"x")
        old = time.time() - 2 * 3600
        os.utime(platform.audio_store.directory / orphan, (old, old))
        assert platform.sweep_audio_orphans() == 1
        assert platform.audio_store.read(name) == b"RIFF....WAVE"
        assert not (platform.audio_store.directory / orphan).exists()
    finally:
        platform.close()
