"""The in-memory rate-limit storage (no Redis): one sweeping thread, not a timer thread per 10 ms."""

from __future__ import annotations

import gc
import threading
import time

import pytest
from flask import Flask
from limits import parse
from limits.storage import memory as limits_memory
from limits.strategies import MovingWindowRateLimiter

import backend.rate_limits as rate_limits_module
from backend.rate_limits import RateLimits, SweptMemoryStorage
from tests.support.live import live_settings


def test_hits_start_no_timer_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    storage = SweptMemoryStorage()
    started: list[object] = []
    monkeypatch.setattr(limits_memory.threading, "Timer", lambda *a, **k: started.append(a) or pytest.fail("timer"))
    limiter = MovingWindowRateLimiter(storage)
    item = parse("3/minute")
    hits = []
    for _ in range(5):
        time.sleep(0.02)  # longer than the stock storage's 10 ms timer, which each hit would restart
        hits.append(limiter.hit(item, "user"))
    assert hits == [True, True, True, False, False]
    assert started == []


def test_the_sweep_frees_expired_entries_and_keeps_live_ones() -> None:
    storage = SweptMemoryStorage()
    limiter = MovingWindowRateLimiter(storage)
    assert limiter.hit(parse("5/second"), "short")
    assert limiter.hit(parse("5/minute"), "long")
    time.sleep(1.05)
    storage.sweep()
    assert [len(v) for k, v in storage.events.items() if "long" in k] == [1]
    assert [len(v) for k, v in storage.events.items() if "short" in k] in ([], [0])


def test_the_sweeping_thread_ends_with_its_storage(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rate_limits_module, "MEMORY_SWEEP_EVERY_S", 0.01)
    before = {t for t in threading.enumerate() if t.name == "rate-limit-sweep"}
    storage = SweptMemoryStorage()
    (sweeper,) = [t for t in threading.enumerate() if t.name == "rate-limit-sweep" and t not in before]
    del storage
    # Collectable once limits' own 10 ms timer (cancelled at start, a thread that may not have
    # ended yet on a loaded machine) lets go of it; the storage and that timer form a cycle.
    deadline = time.monotonic() + 10
    while sweeper.is_alive() and time.monotonic() < deadline:
        gc.collect()
        sweeper.join(0.05)
    assert not sweeper.is_alive()


def test_without_redis_the_app_counts_in_the_swept_storage() -> None:
    limits = RateLimits(Flask("t"), live_settings("sqlite://", None))
    assert limits.storage_uri == "memory://"
    assert isinstance(limits.limiter.storage, SweptMemoryStorage)
