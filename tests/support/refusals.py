"""Pytest plugin: a live server's runner refusing every job, as a shut down runner does (no thread to start).

- ``refuse``: ``refuse(server)`` makes ``server``'s runner refuse every job from then on; ``refuse.undo()``
  takes it back (it is taken back after the test in any case).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from background.runner import ThreadTurnRunner
from tests.support.live import LiveServer


class Refusal:
    def __init__(self) -> None:
        self._dead = ThreadTurnRunner(lambda job, cancel: None, max_workers=1)
        self._dead.shutdown()
        self._patch = pytest.MonkeyPatch()

    def __call__(self, server: LiveServer) -> None:
        self._patch.setattr(server.platform.runner, "submit", self._dead.submit)

    def undo(self) -> None:
        self._patch.undo()


@pytest.fixture
def refuse() -> Iterator[Refusal]:
    refusal = Refusal()
    yield refusal
    refusal.undo()
