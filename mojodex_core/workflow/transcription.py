"""Transcripts from what the user sent: a text or subtitle file read as is, audio or video through an
OpenAI-compatible ``/audio/transcriptions`` endpoint when one is configured."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from mojodex_core.workflow.context import UploadedFile

log = logging.getLogger("mojodex.workflow")

TRANSCRIPT_EXTENSIONS = (".txt", ".vtt", ".srt")
NO_TRANSCRIBER = (
    "This recording cannot be transcribed: no transcription service is configured. Upload a transcript or "
    "subtitle file (.txt, .vtt or .srt) instead, or set MOJODEX_TRANSCRIPTION_BASE_URL (an OpenAI-compatible "
    "endpoint serving /audio/transcriptions)."
)
_TIMING = re.compile(r"^\s*(\d{1,2}:)?\d{1,2}:\d{2}[.,]\d{1,3}\s*-->\s*(\d{1,2}:)?\d{1,2}:\d{2}[.,]\d{1,3}.*$")
_CUE_NUMBER = re.compile(r"^\s*\d+\s*$")
_VTT_BLOCK = re.compile(r"^(NOTE|STYLE|REGION)\b")
_TAGS = re.compile(r"<[^>]+>")


def is_transcript(filename: str) -> bool:
    return filename.lower().endswith(TRANSCRIPT_EXTENSIONS)


def decode(data: bytes) -> str:
    for encoding in ("utf-8-sig", "utf-16"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")


def subtitle_text(text: str) -> str:
    """The spoken words of a .vtt or .srt file: cue numbers, timings, headers and markup removed,
    a line repeated by consecutive cues kept once."""
    lines: list[str] = []
    skipping_block = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            skipping_block = False
            continue
        if line.startswith("WEBVTT") or _VTT_BLOCK.match(line):
            skipping_block = True
            continue
        if skipping_block or _TIMING.match(line) or _CUE_NUMBER.match(line):
            continue
        line = _TAGS.sub("", line).strip()
        if line and (not lines or lines[-1] != line):
            lines.append(line)
    return "\n".join(lines)


def transcript_text(file: UploadedFile) -> str:
    text = decode(file.data)
    if file.filename.lower().endswith((".vtt", ".srt")):
        return subtitle_text(text)
    return text.strip()


@dataclass
class OpenAITranscriber:
    """Audio or video to text through ``POST {base_url}/audio/transcriptions`` (the openai client)."""

    base_url: str
    api_key: str
    model: str = "whisper-1"
    timeout_s: float = 300.0

    def transcribe(self, file: UploadedFile) -> str:
        import openai

        client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key or "not-needed", timeout=self.timeout_s)
        try:
            answer = client.audio.transcriptions.create(
                model=self.model, file=(file.filename, file.data, file.content_type or "application/octet-stream")
            )
        finally:
            client.close()
        text = answer if isinstance(answer, str) else getattr(answer, "text", "")
        log.info("transcribed %s (%d bytes) into %d characters", file.filename, len(file.data), len(text or ""))
        return (text or "").strip()
