"""docker-compose.yml's distributed roles: Celery worker and beat run the project's Celery app."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.foundation.conftest import REPO_ROOT
from tests.foundation.test_compose import SERVICES, command_of


@pytest.mark.parametrize(("service", "role"), [("worker", "worker"), ("beat", "beat")])
def test_celery_roles_run_the_projects_celery_app(service, role):
    argv = command_of(service)
    assert argv[0] == "celery" and argv[argv.index("-A") + 1] == "background.distributed.worker"
    assert argv[argv.index("-A") + 2] == role
    path = REPO_ROOT / Path("background/distributed/worker.py")
    assert re.search(r"^app\s*=", path.read_text(), re.MULTILINE)


def test_every_project_role_runs_distributed_on_the_same_redis():
    for service in ("backend", "worker", "beat"):
        environment = SERVICES[service]["environment"]
        assert environment["MOJODEX_RUNNER"] == "celery", service
        assert environment["REDIS_URL"] == SERVICES["backend"]["environment"]["REDIS_URL"], service
