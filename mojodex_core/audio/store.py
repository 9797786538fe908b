"""Uploaded audio files, one per upload (``new_name``): the message's row names its file (``data.audio.file``).

Each upload has a name of its own, so two uploads for the same message (a retry, two requests racing)
never write the same file: the file a row names is the recording the row describes. An upload is
written under a staged dot name (``stage``), then renamed to its name (``keep``; both: ``save``), so
its name never shows half a file. The route saves it before the message's row is committed and
``remove``s it when no row names it (and a recording a retry replaced, once that is committed).
Rows stored before names had their random part (``<digest>.<ext>``) are read the same way.
A process killed between the save and the commit (or while staging) leaves a file no row names:
``mojodex_core.audio.orphans`` deletes such files at start-up once they are old (``files``,
``remove_orphan``).
"""

from __future__ import annotations

import hashlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path


class AudioStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @staticmethod
    def new_name(session_id: str, message_id: str, extension: str) -> str:
        """A name no other upload has: the message's digest, then a random part."""
        digest = hashlib.sha256(f"{session_id}\0{message_id}".encode()).hexdigest()[:40]
        return f"{digest}_{uuid.uuid4().hex}.{extension}"

    def save(self, name: str, content: bytes) -> None:
        staged = self.stage(content)
        try:
            self.keep(staged, name)
        except BaseException:
            staged.unlink(missing_ok=True)
            raise

    def stage(self, content: bytes) -> Path:
        """Writes ``content`` under a name no message has (a dot name: ``read`` refuses it)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        staged = self.directory / f".{uuid.uuid4().hex}.part"
        try:
            staged.write_bytes(content)
        except BaseException:
            staged.unlink(missing_ok=True)  # a full disk: no half file left
            raise
        return staged

    def keep(self, staged: Path, name: str) -> None:
        """Makes a staged file ``name``'s: whoever reads ``name`` sees the whole file or none."""
        os.replace(staged, self.directory / name)

    def remove(self, name: str) -> None:
        self._path(name).unlink(missing_ok=True)

    def files(self) -> Iterator[tuple[str, float]]:
        """The folder's files (staged ones too; not links nor subfolders) and when each was last written
        (an upload's file keeps its staged file's time). FileNotFoundError: no folder yet."""
        with os.scandir(self.directory) as entries:
            for entry in entries:
                try:
                    if entry.is_file(follow_symlinks=False):
                        yield entry.name, entry.stat(follow_symlinks=False).st_mtime
                except FileNotFoundError:  # removed meanwhile
                    continue

    def remove_orphan(self, name: str) -> bool:
        """Removes a file of the folder by its name, a staged dot name too (``files``' names); never a
        path, a link or a subfolder (the orphans sweep). Whether it removed it."""
        if not name or name in (".", "..") or "/" in name or "\\" in name:
            raise FileNotFoundError(name)
        path = self.directory / name
        if path.is_symlink() or not path.is_file():
            return False
        try:
            path.unlink()  # a link put there since is unlinked itself, never followed
        except FileNotFoundError:
            return False
        return True

    def read(self, name: str) -> bytes:
        return self._path(name).read_bytes()

    def _path(self, name: str) -> Path:
        """A stored file's path; a name read from a row that is not one (a path, a dot name) names none."""
        if not name or "/" in name or "\\" in name or name.startswith("."):
            raise FileNotFoundError(name)
        return self.directory / name
