"""Uploaded audio files, one per (session, message_id): a retry with the same message_id overwrites it.

An upload is written under a name of its own (``stage``), then renamed to the message's file
(``keep``; both: ``save``), so a reader sees the old file or the new one, never half of one. The
route saves it before the message's row is committed and ``remove``s it when no row names it.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path


class AudioStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @staticmethod
    def name_for(session_id: str, message_id: str, extension: str) -> str:
        digest = hashlib.sha256(f"{session_id}\0{message_id}".encode()).hexdigest()[:40]
        return f"{digest}.{extension}"

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
        """Makes a staged file ``name``'s; a turn reading it sees the old file or the new one, never half of one."""
        os.replace(staged, self.directory / name)

    def remove(self, name: str) -> None:
        (self.directory / name).unlink(missing_ok=True)

    def read(self, name: str) -> bytes:
        if "/" in name or name.startswith("."):
            raise FileNotFoundError(name)
        return (self.directory / name).read_bytes()
