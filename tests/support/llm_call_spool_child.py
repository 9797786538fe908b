"""A process that records llm_call rows and never flushes them, for the spool crash test.

    python -m tests.support.llm_call_spool_child DATABASE_URL SPOOL_DIR LABEL COUNT [exit-on-sigterm]
records COUNT calls labelled LABEL, prints "RECORDED", then waits until it is killed. With
``exit-on-sigterm``, SIGTERM makes it exit normally (as a gunicorn worker does): atexit runs.
"""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

from mojodex_core.db import make_engine
from mojodex_core.execution.llm_calls import SpooledLLMCallRecorder
from mojodex_core.llm import LLMCallRecord


def main() -> None:
    database_url, spool_dir, label, count = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    # An hour between flushes and an unreachable batch size: the rows stay in the spool.
    recorder = SpooledLLMCallRecorder(make_engine(database_url), spool_dir, flush_interval_s=3600,
                                      batch_size=10**9)
    for i in range(count):
        recorder(LLMCallRecord(label=label, model="gpt-4o-mini", prompt_tokens=i, completion_tokens=1,
                               latency_ms=1.5, cost=0.001, user_task_execution_pk=None, attempts=1,
                               status="ok"))
    if sys.argv[5:] == ["exit-on-sigterm"]:
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print("RECORDED", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
