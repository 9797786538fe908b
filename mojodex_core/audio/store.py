"""Uploaded audio files, one per (session, message_id): a retry with the same message_id overwrites it."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


class AudioStore:
    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @staticmethod
    def name_for(session_id: str, message_id: str, extension: str) -> str:
        digest = hashlib.sha256(f"{session_id}\0{message_id}".encode()).hexdigest()[:40]
        return f"{digest}.{extension}"

    def save(self, name: str, content: bytes) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / name
        tmp = path.with_suffix(path.suffix + ".part")
        tmp.write_bytes(content)
        os.replace(tmp, path)  # a turn reading it sees the old file or the new one, never half of one

    def read(self, name: str) -> bytes:
        if "/" in name or name.startswith("."):
            raise FileNotFoundError(name)
        return (self.directory / name).read_bytes()
