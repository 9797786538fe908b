"""The audio store: a name of its own per upload; names read from rows are file names of the folder only."""

from __future__ import annotations

import pytest

from mojodex_core.audio.store import AudioStore


def test_each_upload_has_a_name_of_its_own(tmp_path):
    # was: one name per (session, message_id): two uploads for one message wrote the same file
    first, second = (AudioStore.new_name("s", "m", "m4a") for _ in range(2))
    assert first != second and first.endswith(".m4a") and second.endswith(".m4a")
    assert first[:40] == second[:40] != AudioStore.new_name("s", "other", "m4a")[:40]
    store = AudioStore(tmp_path)
    store.save(first, b"one")
    store.save(second, b"two")
    assert (store.read(first), store.read(second)) == (b"one", b"two")


def test_a_name_stored_before_names_had_their_random_part_is_read_and_removed(tmp_path):
    store = AudioStore(tmp_path)
    old = AudioStore.new_name("s", "m", "wav")[:40] + ".wav"
    store.save(old, b"RIFF")
    assert store.read(old) == b"RIFF"
    store.remove(old)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["../x.wav", "a/b.wav", ".secret.part", "", "..\\x.wav"])
def test_a_name_that_is_not_a_file_of_the_folder_is_neither_read_nor_removed(tmp_path, name):
    # Every name is a file that exists (outside the folder, in a subfolder, a staged part, a file named with a
    # backslash), so only the store's check of the name can refuse it.
    folder = tmp_path / "audio"
    (folder / "a").mkdir(parents=True)
    for path in (tmp_path / "x.wav", folder / "a" / "b.wav", folder / ".secret.part", folder / "..\\x.wav"):
        path.write_bytes(b"kept")
    store = AudioStore(folder)
    with pytest.raises(FileNotFoundError):
        store.read(name)
    with pytest.raises(FileNotFoundError):
        store.remove(name)
    assert all(p.read_bytes() == b"kept" for p in (tmp_path / "x.wav", folder / "a" / "b.wav",
                                                   folder / ".secret.part", folder / "..\\x.wav"))
