"""What the platform adds to each workflow step, against an LLM that answers instantly.

    .venv/bin/python bench/workflow_steps.py [--executions 20] [--stanzas 4] [--database-url URL]

All in this process, on loopback: the scripted OpenAI-compatible server (instant answers, the
divider's JSON or a stanza), a live platform server (tests/support/live.py) with the shipped
workflows, and a REST client. Each execution of write_poem runs the divider (1 LLM call), waits
for the user's validation, then --stanzas writers (fan-out, one LLM call each).

Figures, from the step executions' stored start and end times:
  * step_ms: start to end of one step run (LLM call, result row, events);
  * gap_ms: end of a writer to the start of the next writer (the engine choosing and claiming
    the next run: the per-step overhead of chaining);
  * validate_to_text_ms: from POST /user_workflow_step_execution to the produced text, at the client.

The database is a fresh temporary SQLite file by default; a Postgres URL may be given instead:
ITS `public` SCHEMA IS DROPPED AND RECREATED, then migrated to head.

The last line is machine readable:
    step_p50_ms=... step_p95_ms=... gap_p50_ms=... gap_p95_ms=... validate_to_text_p50_ms=...
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from bench._hosts import prepare_database, quiet_logs  # noqa: E402
from bench._measure import percentile  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--executions", type=int, default=20)
    parser.add_argument("--stanzas", type=int, default=4)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    quiet_logs()

    from sqlalchemy import select

    from mojodex_core.db.models import UserWorkflowStepExecution as Row
    from tests.support.live import serving
    from tests.support.scripted_llm import Reply, ScriptedLLMServer
    from tests.workflow._helpers import awaiting, poem_user, start_poem, validate, wait_completed, wait_steps
    from tests.workflow.conftest import load_workflows, workflow_settings

    url, tmpdir = prepare_database(args.database_url)
    llm = ScriptedLLMServer().start()
    topics = [f"topic {i}" for i in range(args.stanzas)]
    llm.responder = lambda body: (Reply(json={"stanza_topics": topics}) if body.get("response_format")
                                  else Reply("A stanza\nof four\nshort\nlines"))
    steps_ms: list[float] = []
    gaps_ms: list[float] = []
    validate_ms: list[float] = []
    try:
        with serving(workflow_settings(url, llm.base_url), configure=load_workflows) as live:
            user = poem_user(live)
            for _ in range(args.executions):
                pk = start_poem(user)["user_task_execution_pk"]
                (divider,) = wait_steps(user, pk, awaiting(1), timeout=60)
                started = time.perf_counter()
                validate(user, divider["user_workflow_step_execution_pk"])
                wait_completed(user, pk, timeout=60)
                validate_ms.append((time.perf_counter() - started) * 1000)
                with live.db() as db:
                    rows = list(db.scalars(select(Row).where(Row.user_task_execution_fk == pk)
                                           .order_by(Row.user_workflow_step_execution_pk)))
                    steps_ms += [(r.end_date - r.start_date).total_seconds() * 1000 for r in rows]
                    writers = [r for r in rows if r.rank == 2]
                    gaps_ms += [(b.start_date - a.end_date).total_seconds() * 1000
                                for a, b in zip(writers, writers[1:], strict=False)]
            live.wait_idle()
    finally:
        llm.stop()
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)

    figures = {
        "executions": args.executions, "stanzas": args.stanzas, "step_runs": len(steps_ms),
        "step_p50_ms": round(percentile(steps_ms, 50), 1), "step_p95_ms": round(percentile(steps_ms, 95), 1),
        "gap_p50_ms": round(percentile(gaps_ms, 50), 1), "gap_p95_ms": round(percentile(gaps_ms, 95), 1),
        "validate_to_text_p50_ms": round(percentile(validate_ms, 50), 1),
        "validate_to_text_p95_ms": round(percentile(validate_ms, 95), 1),
    }
    print(json.dumps(figures, indent=2))
    print(" ".join(f"{k}={v}" for k, v in figures.items()))


if __name__ == "__main__":
    main()
