"""Audio and push settings: defaults, overrides, and one clear error per malformed value."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mojodex_core.audio.transcription import AudioConfig
from mojodex_core.audio.upload import AudioRejected, check_audio, sniff, wav_duration
from mojodex_core.config import ConfigError
from mojodex_core.push.notifiers import LogNotifier, WebhookNotifier, build_notifier, push_config
from mojodex_core.push.presence import LocalPresence

SETTINGS = SimpleNamespace(llm=SimpleNamespace(base_url="http://llm/v1", api_key="k"), var_dir=Path("/tmp/v"),
                           extra={})


def test_audio_defaults_to_the_llm_endpoint_and_env_overrides_it():
    config = AudioConfig.from_settings(SETTINGS, env={})
    assert (config.base_url, config.api_key, config.model) == ("http://llm/v1", "k", "whisper-1")
    assert config.directory == Path("/tmp/v/audio") and config.configured
    own = SimpleNamespace(**{**vars(SETTINGS), "transcription_base_url": "http://stt/v1",
                             "transcription_api_key": "s", "transcription_model": "whisper-2"})
    config = AudioConfig.from_settings(own, env={"MOJODEX_AUDIO_MAX_BYTES": "5000"})
    assert (config.base_url, config.api_key, config.model) == ("http://stt/v1", "s", "whisper-2")
    assert config.max_bytes == 5000
    with pytest.raises(ConfigError, match="MOJODEX_AUDIO_MAX_BYTES"):
        AudioConfig.from_settings(SETTINGS, env={"MOJODEX_AUDIO_MAX_BYTES": "lots"})


def test_push_config_and_notifiers():
    assert isinstance(build_notifier(push_config({}, {})), LogNotifier)
    assert build_notifier(push_config({}, {"MOJODEX_PUSH_NOTIFIER": "none"})) is None
    webhook = build_notifier(push_config({}, {"MOJODEX_PUSH_NOTIFIER": "webhook",
                                              "MOJODEX_PUSH_WEBHOOK_URL": "http://127.0.0.1:9/push"}))
    assert isinstance(webhook, WebhookNotifier)
    with pytest.raises(ConfigError, match="MOJODEX_PUSH_WEBHOOK_URL"):
        push_config({}, {"MOJODEX_PUSH_NOTIFIER": "webhook"})
    with pytest.raises(ConfigError, match="MOJODEX_PUSH_NOTIFIER"):
        push_config({}, {"MOJODEX_PUSH_NOTIFIER": "pigeon"})


def test_presence_counts_sockets_per_user():
    presence = LocalPresence()
    presence.connected("a", "u")
    presence.connected("b", "u")
    presence.disconnected("a")
    assert presence.online("u")
    presence.disconnected("b")
    presence.disconnected("b")  # twice is harmless
    assert not presence.online("u")


def test_audio_checks():
    assert sniff(b"RIFF\x00\x00\x00\x00WAVEfmt ").extension == "wav"
    assert sniff(b"ID3\x04").extension == "mp3" and sniff(b"\xff\xfb\x90").extension == "mp3"
    assert sniff(b"\x00\x00\x00\x18ftypM4A ").mime == "audio/mp4"
    assert sniff(b"OggS").extension == "ogg" and sniff(b"fLaC").extension == "flac"
    assert sniff(b"\x1aE\xdf\xa3").extension == "webm" and sniff(b"hello") is None
    for content, status in [(b"", 400), (b"ID3" + b"\x00" * 100, 413), (b"text", 415)]:
        with pytest.raises(AudioRejected) as info:
            check_audio(content, max_bytes=50)
        assert info.value.status == status
    assert wav_duration(b"ID3 not a wav") is None
