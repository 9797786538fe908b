"""TokenCoalescer: at most one flush per interval (fake clock), order and text preserved."""

from __future__ import annotations

import itertools

import pytest

import mojodex_core.execution.coalescer as coalescer_module
from mojodex_core.execution.coalescer import TokenCoalescer


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(coalescer_module, "time", fake)
    return fake


def test_at_most_one_flush_per_interval(clock: FakeClock):
    flushed: list[tuple[float, str, str]] = []
    coalescer = TokenCoalescer(lambda channel, text: flushed.append((clock.now, channel, text)), 30)
    chunks = [f"t{i} " for i in range(500)]
    for chunk in chunks:  # one chunk per millisecond
        coalescer.add("mojo", chunk)
        clock.now += 0.001
    coalescer.flush()
    assert "".join(text for _t, _c, text in flushed) == "".join(chunks)
    times = [t for t, _c, _text in flushed][:-1]  # the last flush is the end of the stream
    assert all(later - earlier >= 0.030 - 1e-9 for earlier, later in itertools.pairwise(times))
    assert len(flushed) <= 500 / 30 + 2


def test_first_delta_goes_out_at_once_and_the_rest_waits_for_the_interval(clock: FakeClock):
    flushed: list[str] = []
    coalescer = TokenCoalescer(lambda _channel, text: flushed.append(text), 30)
    coalescer.add("mojo", "Hel")
    assert flushed == ["Hel"]
    clock.now += 0.010
    coalescer.add("mojo", "lo")
    clock.now += 0.010
    coalescer.add("mojo", " wor")
    assert flushed == ["Hel"]
    clock.now += 0.011
    coalescer.add("mojo", "ld")
    assert flushed == ["Hel", "lo world"]
    coalescer.add("mojo", "")  # nothing to send
    coalescer.flush()
    coalescer.flush()
    assert flushed == ["Hel", "lo world"]


def test_channels_are_never_merged_and_keep_their_order(clock: FakeClock):
    flushed: list[tuple[str, str]] = []
    coalescer = TokenCoalescer(lambda channel, text: flushed.append((channel, text)), 30)
    for channel, text in [("title", "Sub"), ("title", "ject"), ("draft", "Hi "), ("draft", "there"),
                          ("mojo", "Done")]:
        coalescer.add(channel, text)
    coalescer.flush()
    assert flushed == [("title", "Sub"), ("title", "ject"), ("draft", "Hi there"), ("mojo", "Done")]


def test_text_held_back_is_sent_when_its_window_ends_even_if_the_stream_stalls():
    # Before the fix, a delta held back inside the window waited for the next token,
    # however long the model stalled.
    import threading

    sent = threading.Event()
    flushed: list[str] = []

    def flush(_channel: str, text: str) -> None:
        flushed.append(text)
        sent.set()

    coalescer = TokenCoalescer(flush, 30)
    coalescer.add("mojo", "Hel")  # sent at once: first event of the window
    sent.clear()
    coalescer.add("mojo", "lo")  # held back: inside the window
    assert sent.wait(2.0), "held-back text never sent while the stream stalled"
    assert flushed == ["Hel", "lo"]
    coalescer.close()


def test_discard_drops_held_back_text_of_a_failed_turn():
    flushed: list[str] = []
    coalescer = TokenCoalescer(lambda _c, text: flushed.append(text), 10_000)
    coalescer.add("mojo", "a")
    coalescer.add("mojo", "b")
    coalescer.discard()
    coalescer.add("mojo", "c")
    coalescer.close()
    assert flushed == ["a"]


def test_text_after_a_channel_switch_is_sent_when_its_window_ends():
    # Before the fix, the deadline set before the switch found the window moved and gave up,
    # so the first title/draft text waited for the next token or the end of the stream.
    import threading

    flushed: list[tuple[str, str]] = []
    got_title = threading.Event()

    def flush(channel: str, text: str) -> None:
        flushed.append((channel, text))
        if channel == "title":
            got_title.set()

    coalescer = TokenCoalescer(flush, 30)
    coalescer.add("mojo", "a")  # sent at once
    coalescer.add("mojo", "b")  # held: a deadline is set
    coalescer.add("title", "T")  # switch: "b" sent, "T" held in a new window
    assert got_title.wait(2.0), f"title never sent: {flushed}"
    assert flushed == [("mojo", "a"), ("mojo", "b"), ("title", "T")]
    coalescer.close()
