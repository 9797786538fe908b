"""What an audio upload may be: a known format (sniffed from its bytes, not its declared type), a size limit."""

from __future__ import annotations

import io
import wave
from dataclasses import dataclass

DEFAULT_MAX_BYTES = 10_000_000  # a few minutes of compressed speech; Whisper-style endpoints take up to 25 MB


class AudioRejected(ValueError):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status  # 400 empty, 413 too large, 415 not a supported audio format


@dataclass(frozen=True)
class AudioFormat:
    extension: str
    mime: str


def sniff(head: bytes) -> AudioFormat | None:
    """The audio format of a file from its first bytes (formats the transcription endpoints take)."""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return AudioFormat("wav", "audio/wav")
    if head[:3] == b"ID3" or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return AudioFormat("mp3", "audio/mpeg")
    if head[:4] == b"OggS":
        return AudioFormat("ogg", "audio/ogg")
    if head[:4] == b"fLaC":
        return AudioFormat("flac", "audio/flac")
    if head[:4] == b"\x1aE\xdf\xa3":
        return AudioFormat("webm", "audio/webm")
    if head[4:8] == b"ftyp":
        return AudioFormat("m4a", "audio/mp4")
    return None


def check_audio(content: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> AudioFormat:
    if not content:
        raise AudioRejected(400, "the audio file is empty")
    if len(content) > max_bytes:
        raise AudioRejected(413, f"the audio file is too large ({len(content)} bytes; at most {max_bytes})")
    found = sniff(content[:16])
    if found is None:
        raise AudioRejected(415, "the file is not a supported audio format (wav, mp3, m4a, ogg, webm, flac)")
    return found


def wav_duration(content: bytes) -> float | None:
    """A WAV file's duration in seconds from its header; None for other formats or a broken header."""
    try:
        with wave.open(io.BytesIO(content)) as reader:
            rate = reader.getframerate()
            return round(reader.getnframes() / rate, 3) if rate else None
    except (wave.Error, EOFError, ValueError):
        return None
