"""A platform server in its own process, killed by test_workflow_crash.py while one of its steps runs.

    python -m tests.workflow._crash_worker DATABASE_URL LLM_BASE_URL
prints "PORT <n>" once it serves, then serves until killed.
"""

from __future__ import annotations

import dataclasses
import sys
import threading

from werkzeug.serving import make_server

from backend.app import create_app
from backend.context import build_platform
from tests.workflow.conftest import workflow_settings


def main() -> None:
    database_url, llm_base_url = sys.argv[1], sys.argv[2]
    settings = workflow_settings(database_url, llm_base_url)
    # One LLM attempt: the step hangs in it until the process is killed.
    settings = dataclasses.replace(settings, llm=dataclasses.replace(settings.llm, max_retries=0))
    platform = build_platform(settings, llm_overrides={"first_token_timeout_s": 60})
    app, _socketio = create_app(platform)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    print(f"PORT {server.server_port}", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Event().wait()


if __name__ == "__main__":
    main()
