"""docker-compose.yml (no Docker engine here): its commands are real entry points, its variables are read."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
import yaml

from backend.cli import main as cli_main
from mojodex_core.config import ConfigError, load_settings
from tests.foundation.conftest import REPO_ROOT

COMPOSE = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
# The platform's services run the Dockerfile's default (Python) image; the webapp service its `webapp` stage.
PROJECT_SERVICES = sorted(name for name, service in SERVICES.items() if service.get("build") in (".", "./"))
SOURCE_DIRS = ("mojodex_core", "backend", "background", "migrations")
# How the platform reads a variable: env.get("X"), os.environ["X"], os.getenv("X"), _int(env, "X", ...).
READ_PATTERNS = (
    r"""(?:env|environ|os\.environ)\.get\(\s*["']([A-Z][A-Z0-9_]*)["']""",
    r"""(?:os\.)?environ\[\s*["']([A-Z][A-Z0-9_]*)["']\s*\]""",
    r"""os\.getenv\(\s*["']([A-Z][A-Z0-9_]*)["']""",
    r"""_(?:int|float|bool|url|secret|choice)\(\s*env\s*,\s*["']([A-Z][A-Z0-9_]*)["']""",
)


def variables_read_by_the_project() -> set[str]:
    names: set[str] = set()
    for folder in SOURCE_DIRS:
        for path in (REPO_ROOT / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            for pattern in READ_PATTERNS:
                names.update(re.findall(pattern, text))
    return names


def resolve_click_command(args: list[str]) -> tuple[click.Command, list[str], list[str]]:
    """Walks `mojodex a b ...` down the click groups; returns the command, its path and its own args."""
    command: click.Command = cli_main
    path: list[str] = []
    rest = list(args)
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        sub = command.get_command(click.Context(command), rest[0])
        assert sub is not None, f"`mojodex {' '.join(path + [rest[0]])}` is not a command"
        path.append(rest.pop(0))
        command = sub
    return command, path, rest


def command_of(service: str) -> list[str]:
    command = SERVICES[service].get("command")
    return command.split() if isinstance(command, str) else list(command or [])


def test_the_expected_services_are_described():
    assert {"postgres", "redis", "backend", "background", "webapp", "migrate"} <= set(SERVICES)
    assert {"backend", "background", "migrate"} <= set(PROJECT_SERVICES)
    for name in ("postgres", "redis"):
        assert "image" in SERVICES[name], f"{name} is a third-party image"


def test_the_project_services_build_the_repository_dockerfile():
    assert (REPO_ROOT / "Dockerfile").is_file()
    for name in PROJECT_SERVICES:
        assert SERVICES[name]["build"] in (".", "./"), name


@pytest.mark.parametrize("service", ["migrate", "background"])
def test_mojodex_commands_exist_in_the_click_cli(service, monkeypatch):
    argv = command_of(service)
    assert argv and argv[0] == "mojodex"
    command, path, rest = resolve_click_command(argv[1:])
    assert not isinstance(command, click.Group), f"`mojodex {' '.join(path)}` is a group, not a command"
    monkeypatch.chdir(REPO_ROOT)  # paths such as tasks_config/ are relative to the image's WORKDIR (the repo)
    command.make_context(" ".join(["mojodex", *path]), rest)  # its arguments parse (and paths exist)


def test_the_cli_resolver_rejects_an_unknown_command():
    with pytest.raises(AssertionError, match="is not a command"):
        resolve_click_command(["tasks", "unload"])


def test_the_backend_command_serves_backend_wsgi_app_under_one_gevent_worker():
    argv = command_of("backend")
    assert argv[0] == "gunicorn"
    target = argv[-1]
    module, _, attribute = target.partition(":")
    path = REPO_ROOT / Path(*module.split(".")).with_suffix(".py")
    assert path.is_file(), f"{module} has no file"
    assert re.search(rf"^{attribute}\s*=", path.read_text(), re.MULTILINE), (
        f"{path} defines no `{attribute} =`"
    )
    options = dict(zip(argv[1:-1:2], argv[2:-1:2], strict=True))
    # The worker `mojodex serve` runs (backend/server.py): gevent's, quitting without a traceback.
    from backend.gevent_worker import WORKER_CLASS

    assert options["-k"] == WORKER_CLASS
    assert options["-w"] == "1", "turns, rooms and the token buffer live in one process"
    # As `mojodex serve`: the gevent worker's heartbeat is a greenlet, late while the thread is held.
    assert options["--timeout"] == "120"
    # The bound port is the one the service publishes and advertises in MOJODEX_PORT.
    port = options["-b"].rsplit(":", 1)[1]
    assert SERVICES["backend"]["environment"]["MOJODEX_PORT"] == port
    assert any(str(p).endswith(f":{port}") for p in SERVICES["backend"]["ports"])


def test_the_dockerfile_default_command_matches_the_backend_service():
    text = (REPO_ROOT / "Dockerfile").read_text()
    assert "backend.wsgi:app" in text
    from backend.gevent_worker import WORKER_CLASS

    assert f'"-k", "{WORKER_CLASS}"' in text, "the worker `mojodex serve` and the compose file run"
    for folder in ("mojodex_core", "backend", "background", "migrations", "tasks_config"):
        assert re.search(rf"^COPY {folder} ", text, re.MULTILINE), f"the image lacks {folder}/"


@pytest.mark.parametrize("service", PROJECT_SERVICES)
def test_every_variable_set_for_a_project_service_is_read_by_the_project(service):
    read = variables_read_by_the_project()
    assert {
        "DATABASE_URL",
        "MOJODEX_PORT",
        "MOJODEX_ADMIN_SECRET",
        "OPENAI_API_KEY",
    } <= read  # the scan works
    environment = SERVICES[service].get("environment") or {}
    unknown = sorted(set(environment) - read)
    assert unknown == [], f"{service} sets variables the platform never reads: {unknown}"
    assert "DATABASE_URL" in environment, f"{service} would fall back to a SQLite file inside the container"


def _expand(value: object) -> str:
    """${VAR:-default} -> default, ${VAR:?message} -> a stand-in value (compose requires it to be set)."""
    text = str(value)
    text = re.sub(r"\$\{[A-Z0-9_]+:-([^}]*)\}", r"\1", text)
    return re.sub(r"\$\{[A-Z0-9_]+:\?[^}]*\}", "stand-in-value-0123456789abcdef", text)


def test_the_backend_environment_is_valid_settings():
    environment = {name: _expand(value) for name, value in SERVICES["backend"]["environment"].items()}
    try:
        settings = load_settings(environment)
    except ConfigError as exc:  # pragma: no cover - the message is the diagnosis
        pytest.fail(f"docker-compose.yml backend environment: {exc}")
    assert settings.database_url.startswith("postgresql+psycopg://")
    assert settings.redis_url and settings.redis_url.startswith("redis://")
    assert not settings.embedded  # secrets must come from the operator
    required = {name for name, value in SERVICES["backend"]["environment"].items() if ":?" in str(value)}
    assert {"MOJODEX_ADMIN_SECRET", "MOJODEX_SECRET_KEY"} <= required


def test_the_webapp_serves_the_build_of_the_repository_webapp():
    build = SERVICES["webapp"]["build"]
    assert build["context"] in (".", "./") and build["target"] == "webapp"
    text = (REPO_ROOT / "Dockerfile").read_text()
    stages = re.findall(r"^FROM \S+ AS (\S+)$", text, re.MULTILINE)
    assert {"webapp-build", "webapp"} <= set(stages)
    # Built as `make webapp` builds it (lockfile, same script), then served by nginx and the backend alike.
    assert "RUN npm ci" in text and "RUN npm run build" in text
    assert "COPY --from=webapp-build /webapp/dist /usr/share/nginx/html" in text
    assert "COPY --from=webapp-build /webapp/dist ./webapp/dist" in text
    for path in ("webapp/package-lock.json", "webapp/index.html", "webapp/nginx.conf"):
        assert (REPO_ROOT / path).is_file(), path


@pytest.mark.parametrize("service", ["backend", "worker"])
def test_the_services_that_record_llm_calls_keep_their_spool_on_a_volume(service):
    # A process's unstored llm_call rows wait in <MOJODEX_VAR_DIR>/spool until stored, and are
    # replayed at the next start after a crash: in a container's own filesystem they would go
    # with the container when it is re-created.
    var_dir = SERVICES[service]["environment"]["MOJODEX_VAR_DIR"]
    mounts = {m.split(":")[1]: m.split(":")[0] for m in SERVICES[service].get("volumes", [])}
    assert mounts.get(var_dir) in COMPOSE.get("volumes", {}), f"{service}: {var_dir} is not on a named volume"
