"""`make run` ends with the URL and, in the embedded default, the demo user's token."""

from __future__ import annotations

import dataclasses

from backend.server import ready_banner, show_banner
from tests.support.live import live_settings


def test_the_banner_gives_a_reachable_url_and_the_demo_token(tmp_path):  # noqa: ANN001
    settings = dataclasses.replace(
        live_settings("sqlite://", None), host="0.0.0.0", port=5055, embedded=True, var_dir=tmp_path
    )
    (tmp_path / "demo_token").write_text("tok-123\n")
    banner = ready_banner(settings)
    assert "http://127.0.0.1:5055/" in banner
    assert banner.rstrip().endswith("tok-123")


def test_no_token_outside_the_embedded_default(tmp_path):  # noqa: ANN001
    settings = dataclasses.replace(live_settings("sqlite://", None), port=5055, var_dir=tmp_path)
    (tmp_path / "demo_token").write_text("tok-123\n")
    assert "tok-123" not in ready_banner(settings)


def test_an_unbuilt_web_app_is_said_before_the_demo_token(tmp_path):  # noqa: ANN001
    # was: the "not built" note came last, after the token (and failed the test above without a build)
    settings = dataclasses.replace(live_settings("sqlite://", None), port=5055, embedded=True, var_dir=tmp_path)
    (tmp_path / "demo_token").write_text("tok-123\n")
    banner = ready_banner(settings, webapp_dist=tmp_path / "no_dist")
    assert "The web app is not built" in banner
    assert banner.rstrip().endswith("tok-123")


class _Writes:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def write(self, text: str) -> int:
        self.calls.append(text)
        return len(text)

    def flush(self) -> None:
        pass


def test_the_banner_is_written_whole_so_a_log_line_cannot_split_it(tmp_path):  # noqa: ANN001
    # was: print() wrote the banner, then its newline: the audio sweep's log line, written by another thread
    # to the same terminal, landed between the demo password and its newline ("...Nr47V3G2FEBEdMfz2026-12-07
    # 20:35:58,019 INFO mojodex.audio: ...")
    settings = dataclasses.replace(live_settings("sqlite://", None), embedded=True, var_dir=tmp_path)
    (tmp_path / "demo_password").write_text("pw-123\n")
    stream = _Writes()
    show_banner(settings, stream)
    assert len(stream.calls) == 1 and stream.calls[0].endswith("pw-123\n")
