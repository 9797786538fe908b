"""Measuring the bench: percentiles, CPU readings (processes, the machine, Postgres) and the
two server-side profilers of --profile (StackSampler for 'wall', CpuProfiler for 'cpu').

Imported by bench/turn_overhead.py (the entry point) and bench/_hosts.py.
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


def percentile(values: list[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = (len(ordered) - 1) * p / 100.0
    lo = int(k)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (k - lo)


def process_cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of a process, all threads (Linux /proc; None elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def machine_cpu() -> tuple[float, float] | None:
    """(busy, total) jiffies of the whole machine, every process of every user included."""
    try:
        with open("/proc/stat") as f:
            values = [int(v) for v in f.readline().split()[1:]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)
        return float(sum(values) - idle), float(sum(values))
    except (OSError, ValueError, IndexError):
        return None


def postgres_cpu_s() -> float | None:
    """CPU seconds of every local `postgres` process (all databases, other users' included)."""
    total, found = 0.0, False
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().strip() != "postgres":
                    continue
        except OSError:
            continue
        cpu = process_cpu_s(int(entry))
        if cpu is not None:
            total, found = total + cpu, True
    return total if found else None


class CpuMeter:
    """CPU used by each bench process over a phase, in cores (1.0 = one core busy all along)."""

    def __init__(self, pids: dict[str, int], postgres: bool = False) -> None:
        self.pids = pids
        self.postgres = postgres_cpu_s() if postgres else None
        self.wall = time.perf_counter()
        self.cpu = {name: process_cpu_s(pid) for name, pid in pids.items()}
        self.machine = machine_cpu()

    def summary(self) -> str:
        wall = time.perf_counter() - self.wall
        parts = []
        for name, pid in self.pids.items():
            now, before = process_cpu_s(pid), self.cpu[name]
            if now is not None and before is not None:
                parts.append(f"{name} {(now - before) / wall:.2f}")
        if self.postgres is not None:
            # Backends that exited during the phase are missed; new ones count from zero.
            now = postgres_cpu_s()
            if now is not None:
                parts.append(f"postgres server {max(now - self.postgres, 0.0) / wall:.2f}")
        machine = machine_cpu()
        if machine and self.machine:
            busy = (machine[0] - self.machine[0]) / max(machine[1] - self.machine[1], 1.0)
            parts.append(
                f"whole machine {busy * (os.cpu_count() or 1):.2f} of {os.cpu_count()} "
                f"(other users' processes included)"
            )
        return "CPU in cores: " + ", ".join(parts) if parts else ""


# --------------------------------------------------------------------------- server-side profilers


class StackSampler:
    """A poor man's py-spy: samples every thread's Python stack every interval.

    Blocked threads are sampled too (their Python frame is the one that blocked), so
    inclusive counts are wall-time shares, not CPU shares.
    """

    def __init__(
        self, interval_s: float = 0.01, turn_function: str = "mojodex_core/execution/turn.py:InstructTurn.__call__"
    ) -> None:
        self.interval_s = interval_s
        self.turn_function = turn_function
        self.ticks = 0
        self.groups: Counter[str] = Counter()
        self.inclusive: Counter[tuple[str, str]] = Counter()
        self.leaf: Counter[tuple[str, str]] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @staticmethod
    def _where(filename: str) -> str:
        if filename.startswith(str(REPO_ROOT)):
            return filename[len(str(REPO_ROOT)) + 1 :]
        parts = Path(filename).parts
        return "/".join(parts[-2:])

    def _run(self) -> None:
        me = threading.get_ident()
        while not self._stop.wait(self.interval_s):
            names = {t.ident: t.name for t in threading.enumerate()}
            self.ticks += 1
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                group = re.sub(r"\d+", "N", names.get(ident, "?"))
                funcs: list[str] = []
                f = frame
                while f is not None and len(funcs) < 100:
                    code = f.f_code
                    funcs.append(f"{self._where(code.co_filename)}:{code.co_qualname}")
                    f = f.f_back
                self.groups[group] += 1
                self.leaf[(group, f"{funcs[0]}:{frame.f_lineno}")] += 1
                for fn in set(funcs):
                    self.inclusive[(group, fn)] += 1

    def report(self) -> str:
        self._stop.set()
        self._thread.join(timeout=2)
        lines = [f"stack samples: {self.ticks} ticks every {self.interval_s * 1000:.0f} ms"]
        turn_key = ("turn_N", self.turn_function)
        busy = self.inclusive.get(turn_key, 0)
        if busy:
            lines.append(
                f"turn threads inside {self.turn_function.split(':')[-1]}: {busy} samples "
                f"(= {busy / max(self.ticks, 1):.1f} turns in flight on average); share of that time:"
            )
            rows = sorted(((fn, n) for (g, fn), n in self.inclusive.items() if g == "turn_N"), key=lambda r: -r[1])
            for fn, n in rows[:25]:
                lines.append(f"  {100 * n / busy:5.1f}%  {fn}")
            lines.append("turn threads, platform code only (>= 0.5%):")
            for fn, n in rows:
                if fn.startswith(("mojodex_core/", "backend/", "background/")) and n >= busy / 200:
                    lines.append(f"  {100 * n / busy:5.1f}%  {fn}")
            lines.append("turn threads, innermost frames (wall time, blocked included):")
            rows = [(fn, n) for (g, fn), n in self.leaf.items() if g == "turn_N"]
            for fn, n in sorted(rows, key=lambda r: -r[1])[:20]:
                lines.append(f"  {100 * n / busy:5.1f}%  {fn}")
        lines.append("other thread groups (samples; top innermost frames):")
        for group, total in self.groups.most_common(12):
            if group == "turn_N":
                continue
            top = sorted(((fn, n) for (g, fn), n in self.leaf.items() if g == group), key=lambda r: -r[1])[:4]
            lines.append(f"  {group}: {total}")
            for fn, n in top:
                lines.append(f"      {100 * n / total:5.1f}%  {fn}")
        return "\n".join(lines)


class CpuProfiler:
    """cProfile with a per-thread CPU clock around each turn and each REST request.

    Times are CPU seconds of the thread (time.thread_time), so waiting for the GIL, a lock
    or the database is not counted; cProfile's own overhead inflates small functions.
    Socket.IO work done on the turn threads (emits) is included; websocket threads are not.
    """

    def __init__(self) -> None:
        self.active = True
        self._lock = threading.Lock()
        self._profiles: list[cProfile.Profile] = []
        self.calls: Counter[str] = Counter()

    def wrap(self, fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            if not self.active:
                return fn(*args, **kwargs)
            profile = cProfile.Profile(time.thread_time)
            profile.enable()
            try:
                return fn(*args, **kwargs)
            finally:
                profile.disable()
                with self._lock:
                    if self.active:
                        self._profiles.append(profile)
                        self.calls[label] += 1

        return wrapper

    def report(self) -> str:
        with self._lock:
            self.active = False
            profiles = list(self._profiles)
        if not profiles:
            return "cpu profile: nothing recorded"
        stats = pstats.Stats(*profiles, stream=io.StringIO())
        stats.strip_dirs()
        total = stats.total_tt
        per_turn = 1000 * total / max(self.calls.get("turn", 1), 1)
        lines = [f"cpu profile: {dict(self.calls)}, {total:.2f} CPU-s recorded ({per_turn:.1f} ms per turn)"]
        for key, title, limit in (("cumulative", "by cumulative CPU", 45), ("tottime", "by own CPU", 25)):
            out = io.StringIO()
            stats.stream = out
            stats.sort_stats(key).print_stats(limit)
            body = out.getvalue()
            body = body[body.find("ncalls") :] if "ncalls" in body else body
            lines.append(f"-- {title}\n{body.rstrip()}")
        return "\n".join(lines)
