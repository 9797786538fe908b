"""Which audio files are orphans: uploads (and staged parts) older than the grace that no message names."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest
from sqlalchemy import event

from mojodex_core.audio.orphans import StoredFile, messages_naming, orphans, sweep_orphans
from mojodex_core.audio.store import AudioStore
from mojodex_core.db import factory_engine, make_engine, make_session_factory, transaction
from mojodex_core.db.models import Message
from tests.unit._rows import session_row

HOUR = 3600.0
UPLOAD = AudioStore.new_name("s", "m", "wav")  # <digest>_<random>.wav
LEGACY = UPLOAD[:40] + ".m4a"  # rows stored before names had their random part
STAGED = ".0123456789abcdef0123456789abcdef.part"


def test_an_old_upload_no_row_names_is_an_orphan_and_a_named_one_is_not():
    files = [StoredFile(UPLOAD, 2 * HOUR), StoredFile(LEGACY, 2 * HOUR)]
    assert orphans(files, named={LEGACY}, grace_s=HOUR) == [UPLOAD]
    assert orphans(files, named={UPLOAD, LEGACY}, grace_s=HOUR) == []


def test_a_staged_part_left_by_a_killed_save_is_an_orphan_once_old():
    files = [StoredFile(STAGED, 2 * HOUR), StoredFile(UPLOAD[:40] + ".wav.part", 2 * HOUR)]
    assert orphans(files, named=set(), grace_s=HOUR) == [STAGED, UPLOAD[:40] + ".wav.part"]


def test_a_file_younger_than_the_grace_is_never_an_orphan():
    # an upload in flight: written, its row not committed yet
    files = [StoredFile(UPLOAD, HOUR - 1), StoredFile(STAGED, 0.0), StoredFile(LEGACY, HOUR)]
    assert orphans(files, named=set(), grace_s=HOUR) == []


@pytest.mark.parametrize("name", [
    "voice_" + "a" * 40 + ".mp3",  # a voice reply: no row names it, it is kept to be read again
    "notes.txt", "resumed.wav", ".hidden", "..", "x" * 40 + ".wav", "A" * 40 + ".wav",
    "a" * 40 + "_" + "b" * 31 + ".wav", "../" + "a" * 40 + ".wav", "a" * 40 + ".wav/x",
])
def test_a_file_the_store_did_not_make_for_an_upload_is_never_an_orphan(name):
    assert orphans([StoredFile(name, 100 * HOUR)], named=set(), grace_s=HOUR) == []


class _Names:
    """The look-up of named files: records the batches it was asked."""

    def __init__(self, named: set[str]) -> None:
        self.named, self.batches = named, []

    def __call__(self, names: list[str]) -> set[str]:
        self.batches.append(list(names))
        return self.named & set(names)


def _write(folder, name: str, age_s: float) -> None:  # noqa: ANN001
    path = folder / name
    path.write_bytes(b"audio")
    then = time.time() - age_s
    os.utime(path, (then, then))


def test_the_sweep_deletes_old_orphans_only_and_looks_up_only_old_candidates(tmp_path, caplog):
    store = AudioStore(tmp_path)
    named, orphan, fresh, voice = (AudioStore.new_name("s", m, "wav") for m in ("named", "orphan", "fresh", "v"))
    voice = "voice_" + voice[:40] + ".mp3"
    for name in (named, orphan, STAGED, voice):
        _write(tmp_path, name, 2 * HOUR)
    _write(tmp_path, fresh, 60)
    (tmp_path / "sub").mkdir()
    lookup = _Names({named})
    with caplog.at_level("INFO", logger="mojodex.audio"):
        result = sweep_orphans(store, lookup, grace_s=HOUR)
    assert sorted(os.listdir(tmp_path)) == sorted([named, fresh, voice, "sub"])
    assert sorted(n for batch in lookup.batches for n in batch) == sorted([named, orphan, STAGED])
    assert (result.looked_at, result.deleted, result.kept) == (5, 2, 3)
    [line] = [r.getMessage() for r in caplog.records if "audio" in r.getMessage()]
    assert "5 file(s) looked at, 2 orphan(s) deleted, 3 kept" in line


def test_the_sweep_asks_once_for_every_candidate_and_not_at_all_without_one(tmp_path):
    # was: one look-up per 500 candidates, each a scan of the message table
    names = [AudioStore.new_name("s", str(i), "ogg") for i in range(1201)]
    for name in names:
        _write(tmp_path, name, 2 * HOUR)
    lookup = _Names(set(names[:3]))
    result = sweep_orphans(AudioStore(tmp_path), lookup, grace_s=HOUR)
    assert [len(b) for b in lookup.batches] == [1201]
    assert sorted(os.listdir(tmp_path)) == sorted(names[:3]) and result.deleted == 1198
    lookup = _Names(set())
    assert sweep_orphans(AudioStore(tmp_path), lookup, grace_s=1000 * HOUR).looked_at == 3
    assert lookup.batches == []


def test_a_link_in_the_folder_is_not_followed_nor_its_target_deleted(tmp_path):
    outside = tmp_path / "outside.wav"
    outside.write_bytes(b"kept")
    folder = tmp_path / "audio"
    folder.mkdir()
    link = folder / AudioStore.new_name("s", "link", "wav")
    link.symlink_to(outside)
    then = time.time() - 2 * HOUR
    os.utime(link, (then, then), follow_symlinks=False)
    os.utime(outside, (then, then))
    result = sweep_orphans(AudioStore(folder), _Names(set()), grace_s=HOUR)
    assert outside.read_bytes() == b"kept" and link.is_symlink() and result.deleted == 0


def test_a_missing_folder_or_an_unreachable_database_deletes_nothing_and_raises_nothing(tmp_path, caplog):
    with caplog.at_level("INFO", logger="mojodex.audio"):
        assert sweep_orphans(AudioStore(tmp_path / "none"), _Names(set()), grace_s=HOUR).looked_at == 0
    _write(tmp_path, UPLOAD, 2 * HOUR)

    def down(_names: list[str]) -> set[str]:
        raise ConnectionError("the database is down")

    with caplog.at_level("INFO", logger="mojodex.audio"):
        assert sweep_orphans(AudioStore(tmp_path), down, grace_s=HOUR) is None
    assert os.listdir(tmp_path) == [UPLOAD]
    assert any("nothing deleted" in r.getMessage() for r in caplog.records)


@pytest.fixture
def factory(database_url: str) -> Iterator:
    engine = make_engine(database_url)
    yield make_session_factory(engine)
    engine.dispose()


def test_the_names_rows_hold_are_read_on_this_database_whatever_the_shape_of_their_data(factory):
    named, other = (AudioStore.new_name("s", m, "wav") for m in ("named", "other"))
    with transaction(factory) as db:
        session_id = session_row(db)
        db.flush()
        for i, data in enumerate([{"audio": {"file": named, "mime": "audio/wav"}}, {}, {"audio": "x"},
                                  {"audio": {"file": 3}}, {"audio": {"file": None}}, {"audio": []},
                                  {"other": {"file": other}}]):
            db.add(Message(session_id=session_id, sender="user", message_id=f"m{i}", event_name="user_message",
                           text="t", status="answered", data=data))
    assert messages_naming(factory)([named, other]) == {named}
    assert messages_naming(factory)([other]) == set()


def test_a_database_that_does_not_answer_deletes_nothing(tmp_path, caplog):
    folder = tmp_path / "audio"
    folder.mkdir()
    _write(folder, UPLOAD, 2 * HOUR)
    unreachable = make_engine(f"sqlite:///{tmp_path}")  # a folder: every connection fails
    with caplog.at_level("INFO", logger="mojodex.audio"):
        result = sweep_orphans(AudioStore(folder), messages_naming(make_session_factory(unreachable)), grace_s=HOUR)
    unreachable.dispose()
    assert result is None and os.listdir(folder) == [UPLOAD]
    assert any("OperationalError" in r.getMessage() and "nothing deleted" in r.getMessage() for r in caplog.records)


def test_the_sweep_reads_the_message_table_once_whatever_the_number_of_candidates(factory, tmp_path):
    # was: no index serves data.audio.file, and each batch of 500 names was a scan of the whole table:
    # 50,000 uploads on 500,000 messages held the start-up for 10 to 15 s
    folder = tmp_path / "audio"
    folder.mkdir()
    names = []
    with transaction(factory) as db:
        session_id = session_row(db)
        db.flush()
        for i in range(1600):  # answered audio messages, all with their file: no orphan at all
            names.append(AudioStore.new_name(session_id, f"m{i}", "m4a"))
            _write(folder, names[-1], 2 * HOUR)
            db.add(Message(session_id=session_id, sender="user", message_id=f"m{i}", event_name="user_message",
                           text="t", status="answered", data={"audio": {"file": names[-1]}}))
    _write(folder, UPLOAD, 2 * HOUR)  # and one orphan
    statements = []

    def record(_conn, _cursor, statement, *_args) -> None:  # noqa: ANN001
        if "FROM message" in statement:
            statements.append(statement)

    engine = factory_engine(factory)
    event.listen(engine, "before_cursor_execute", record)
    try:
        result = sweep_orphans(AudioStore(folder), messages_naming(factory), grace_s=HOUR)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert (result.looked_at, result.deleted) == (1601, 1) and len(os.listdir(folder)) == 1600
    assert len(statements) == 1, statements
