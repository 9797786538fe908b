"""Merges token deltas so a session gets at most one token event per interval."""

from __future__ import annotations

import time
from typing import Callable

Flush = Callable[[str, str], None]  # (channel, text)


class TokenCoalescer:
    def __init__(self, flush: Flush, interval_ms: int = 30) -> None:
        self._flush = flush
        self._interval = interval_ms / 1000.0
        self._channel: str | None = None
        self._pending: list[str] = []
        self._last_flush = 0.0

    def add(self, channel: str, text: str) -> None:
        if not text:
            return
        if self._channel is not None and channel != self._channel:
            self.flush()  # never merge across channels: order between them matters
        self._channel = channel
        self._pending.append(text)
        if time.monotonic() - self._last_flush >= self._interval:
            self.flush()

    def flush(self) -> None:
        if self._pending and self._channel is not None:
            text = "".join(self._pending)
            self._pending = []
            self._last_flush = time.monotonic()
            self._flush(self._channel, text)
