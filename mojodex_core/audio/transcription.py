"""Speech to text through an OpenAI-compatible ``/audio/transcriptions`` endpoint (Whisper's API)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import openai

from mojodex_core.audio.upload import DEFAULT_MAX_BYTES
from mojodex_core.config import _float, _int


class TranscriptionError(Exception):
    """The audio could not be transcribed; the message says why (shown to the user)."""


@dataclass(frozen=True)
class TranscriptionResult:
    text: str
    duration_s: float | None = None
    language: str | None = None


class Transcriber(Protocol):
    def transcribe(self, content: bytes, filename: str, mime: str) -> TranscriptionResult: ...


@dataclass(frozen=True)
class AudioConfig:
    base_url: str | None
    api_key: str | None
    model: str = "whisper-1"
    timeout_s: float = 60.0
    max_retries: int = 1
    max_bytes: int = DEFAULT_MAX_BYTES
    directory: Path = Path("var/audio")
    # Voice replies (/audio/speech): off unless a speech model is set.
    speech_model: str | None = None
    speech_voice: str = "alloy"
    speech_base_url: str | None = None

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.api_key)

    @classmethod
    def from_settings(cls, settings, env: Mapping[str, str] | None = None) -> AudioConfig:  # noqa: ANN001
        """The settings' transcription endpoint (MOJODEX_TRANSCRIPTION_*), else the chat LLM's;
        ``settings.extra["audio"]`` (a dict of these fields) wins, for tests and embedders."""
        env = os.environ if env is None else env
        transcription_url = getattr(settings, "transcription_base_url", None)
        values = {
            # The transcription endpoint workflows use (MOJODEX_TRANSCRIPTION_*), else the chat LLM's.
            "base_url": transcription_url or settings.llm.base_url,
            "api_key": (getattr(settings, "transcription_api_key", None) if transcription_url else None)
            or settings.llm.api_key,
            "model": getattr(settings, "transcription_model", None) or "whisper-1",
            "timeout_s": _float(env, "MOJODEX_TRANSCRIPTION_TIMEOUT_S", 60.0, 1.0, 600.0),
            "max_bytes": _int(env, "MOJODEX_AUDIO_MAX_BYTES", DEFAULT_MAX_BYTES, 1024, 100 * 1024 * 1024),
            "directory": settings.var_dir / "audio",
            "speech_model": env.get("MOJODEX_SPEECH_MODEL") or None,
            "speech_voice": env.get("MOJODEX_SPEECH_VOICE") or "alloy",
            "speech_base_url": env.get("MOJODEX_SPEECH_BASE_URL") or None,
        }
        values.update(settings.extra.get("audio") or {})
        return cls(**values)


class SpeechError(Exception):
    """The reply could not be spoken; the message says why."""


class OpenAISpeech:
    """Text to speech through an OpenAI-compatible ``/audio/speech`` endpoint (mp3)."""

    def __init__(self, config: AudioConfig) -> None:
        self._model = config.speech_model
        self._voice = config.speech_voice
        self._client = openai.OpenAI(
            base_url=config.speech_base_url or config.base_url, api_key=config.api_key or "not-needed",
            timeout=config.timeout_s, max_retries=config.max_retries,
        )

    def speak(self, text: str) -> bytes:
        try:
            response = self._client.audio.speech.create(model=self._model, voice=self._voice, input=text,
                                                        response_format="mp3")
        except openai.APIStatusError as exc:
            raise SpeechError(f"the speech service answered HTTP {exc.status_code}") from exc
        except openai.APIError as exc:
            raise SpeechError(f"the speech service failed ({type(exc).__name__})") from exc
        content = response.content
        if not content:
            raise SpeechError("the speech service returned no audio")
        return content


class OpenAITranscriber:
    def __init__(self, config: AudioConfig) -> None:
        self._model = config.model
        self._client = openai.OpenAI(
            base_url=config.base_url, api_key=config.api_key or "not-needed",
            timeout=config.timeout_s, max_retries=config.max_retries,
        )

    def transcribe(self, content: bytes, filename: str, mime: str) -> TranscriptionResult:
        try:
            result = self._client.audio.transcriptions.create(
                model=self._model, file=(filename, content, mime), response_format="verbose_json",
            )
        except openai.APIStatusError as exc:
            raise TranscriptionError(f"the transcription service answered HTTP {exc.status_code}") from exc
        except openai.APITimeoutError as exc:
            raise TranscriptionError("the transcription service timed out") from exc
        except openai.APIError as exc:
            raise TranscriptionError(f"the transcription service failed ({type(exc).__name__})") from exc
        text = (getattr(result, "text", None) or "").strip()
        duration = getattr(result, "duration", None)
        return TranscriptionResult(text=text, duration_s=float(duration) if duration else None,
                                   language=getattr(result, "language", None))

    def close(self) -> None:
        self._client.close()
