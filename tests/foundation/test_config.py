"""Settings: documented defaults, one clear line per malformed value, secrets, the embedded default."""

from __future__ import annotations

import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mojodex_core.config import PROJECT_ROOT, ConfigError, load_settings
from tests.foundation.conftest import REPO_ROOT, clean_env

ADMIN = "admin-secret-0123456789abcdef"
KEY = "secret-key-0123456789abcdef"


def env(tmp_path: Path, **values: str) -> dict[str, str]:
    base = {
        "MOJODEX_ADMIN_SECRET": ADMIN,
        "MOJODEX_SECRET_KEY": KEY,
        "MOJODEX_VAR_DIR": str(tmp_path / "var"),
    }
    base.update(values)
    return base


def test_defaults_are_the_documented_ones(tmp_path):
    settings = load_settings(env(tmp_path))
    assert settings.database_url == f"sqlite:///{tmp_path / 'var' / 'mojodex.db'}"
    assert settings.is_sqlite
    assert settings.redis_url is None
    assert settings.llm.base_url is None
    assert settings.llm.api_key is None
    assert not settings.llm.configured
    assert settings.llm.model == "gpt-4o-mini"
    assert settings.llm.fallback_model is None
    assert settings.llm.timeout_s == 60.0
    assert settings.llm.max_retries == 3
    assert settings.admin_secret == ADMIN
    assert settings.secret_key == KEY
    assert settings.host == "127.0.0.1"
    assert settings.port == 5001
    assert settings.embedded is False
    assert settings.tasks_config_dir == PROJECT_ROOT / "tasks_config"
    assert settings.log_level == "INFO"
    assert settings.token_coalesce_ms == 30
    assert settings.turn_timeout_s == 180.0
    assert settings.login_token_lifetime_days == 30


def test_every_setting_is_read(tmp_path):
    settings = load_settings(
        env(
            tmp_path,
            DATABASE_URL="postgres://u:p@db.example:5433/mojo",
            REDIS_URL="redis://cache:6379/1",
            MOJODEX_LLM_BASE_URL="https://llm.example/v1",
            MOJODEX_LLM_API_KEY="sk-mojodex",
            OPENAI_API_KEY="sk-openai",
            MOJODEX_LLM_MODEL="gpt-4o",
            MOJODEX_LLM_FALLBACK_MODEL="gpt-4o-mini",
            MOJODEX_LLM_TIMEOUT_S="12.5",
            MOJODEX_LLM_MAX_RETRIES="0",
            MOJODEX_HOST="0.0.0.0",
            MOJODEX_PORT="8080",
            MOJODEX_LOG_LEVEL="debug",
            MOJODEX_TOKEN_COALESCE_MS="0",
            MOJODEX_TURN_TIMEOUT_S="30",
            MOJODEX_TASKS_CONFIG_DIR=str(tmp_path / "tasks"),
            MOJODEX_LOGIN_TOKEN_LIFETIME_DAYS="7",
        )
    )
    # postgres:// is normalised to the psycopg 3 driver the platform ships.
    assert settings.database_url == "postgresql+psycopg://u:p@db.example:5433/mojo"
    assert not settings.is_sqlite
    assert settings.redis_url == "redis://cache:6379/1"
    assert settings.llm.base_url == "https://llm.example/v1"
    assert settings.llm.api_key == "sk-mojodex"  # MOJODEX_LLM_API_KEY wins over OPENAI_API_KEY
    assert settings.llm.model == "gpt-4o"
    assert settings.llm.fallback_model == "gpt-4o-mini"
    assert settings.llm.timeout_s == 12.5
    assert settings.llm.max_retries == 0
    assert (settings.host, settings.port) == ("0.0.0.0", 8080)
    assert settings.log_level == "DEBUG"
    assert settings.token_coalesce_ms == 0
    assert settings.turn_timeout_s == 30.0
    assert settings.tasks_config_dir == tmp_path / "tasks"
    assert settings.login_token_lifetime_days == 7


def test_openai_api_key_is_read_when_mojodex_key_is_unset(tmp_path):
    settings = load_settings(env(tmp_path, OPENAI_API_KEY="sk-openai", MOJODEX_LLM_API_KEY=""))
    assert settings.llm.api_key == "sk-openai"
    assert settings.llm.configured


@pytest.mark.parametrize(
    ("name", "value", "rule"),
    [
        ("MOJODEX_PORT", "abc", "must be an integer"),
        ("MOJODEX_PORT", "70000", "between 1 and 65535"),
        ("MOJODEX_PORT", "0", "between 1 and 65535"),
        ("DATABASE_URL", "mysql://x", "scheme"),
        ("DATABASE_URL", "not a url", "scheme"),
        ("DATABASE_URL", "postgresql://", "no host"),
        ("REDIS_URL", "http://cache:6379", "scheme"),
        ("MOJODEX_LLM_BASE_URL", "ftp://llm.example", "scheme"),
        ("MOJODEX_EMBEDDED", "maybe", "must be true or false"),
        ("MOJODEX_LOG_LEVEL", "LOUD", "must be one of"),
        ("MOJODEX_LLM_TIMEOUT_S", "soon", "must be a number"),
        ("MOJODEX_LLM_TIMEOUT_S", "nan", "between"),
        ("MOJODEX_LLM_MAX_RETRIES", "99", "between 0 and 10"),
        ("MOJODEX_TOKEN_COALESCE_MS", "-1", "between 0 and 1000"),
        ("MOJODEX_TURN_TIMEOUT_S", "0", "between"),
        ("MOJODEX_LOGIN_TOKEN_LIFETIME_DAYS", "0", "between 1 and 3650"),
        ("MOJODEX_ADMIN_SECRET", "short", "at least 16 characters"),
        ("MOJODEX_SECRET_KEY", "short", "at least 16 characters"),
    ],
)
def test_a_malformed_setting_fails_with_one_line_naming_it(tmp_path, name, value, rule):
    with pytest.raises(ConfigError) as caught:
        load_settings(env(tmp_path, **{name: value}))
    message = str(caught.value)
    assert message.startswith(f"{name}:"), message
    assert rule in message
    assert "\n" not in message


@pytest.mark.parametrize("missing", ["MOJODEX_ADMIN_SECRET", "MOJODEX_SECRET_KEY"])
def test_missing_secret_outside_embedded_mode_is_an_error_naming_it(tmp_path, missing):
    values = env(tmp_path)
    del values[missing]
    with pytest.raises(ConfigError) as caught:
        load_settings(values)
    assert str(caught.value).startswith(f"{missing}: is required")
    assert not (tmp_path / "var").exists(), "nothing is generated outside embedded mode"


def test_embedded_mode_generates_secrets_into_var_dir_and_reuses_them(tmp_path, capsys):
    var_dir = tmp_path / "var"
    values = {"MOJODEX_EMBEDDED": "1", "MOJODEX_VAR_DIR": str(var_dir)}
    first = load_settings(values)
    announced = capsys.readouterr().out
    assert first.embedded
    assert len(first.admin_secret) >= 16 and len(first.secret_key) >= 16
    assert first.admin_secret != first.secret_key
    for name, value in (
        ("mojodex_admin_secret", first.admin_secret),
        ("mojodex_secret_key", first.secret_key),
    ):
        path = var_dir / name
        assert path.read_text().strip() == value
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert first.admin_secret in announced  # printed once, on the run that creates it
    assert first.secret_key not in announced

    second = load_settings(values)
    assert (second.admin_secret, second.secret_key) == (first.admin_secret, first.secret_key)
    assert capsys.readouterr().out == ""
    # The default database lives in the same folder.
    assert second.database_url == f"sqlite:///{var_dir / 'mojodex.db'}"


def test_embedded_mode_uses_given_secrets_without_writing_files(tmp_path):
    settings = load_settings(env(tmp_path, MOJODEX_EMBEDDED="true"))
    assert settings.admin_secret == ADMIN
    assert not (tmp_path / "var" / "mojodex_admin_secret").exists()


@pytest.mark.parametrize("stored", ["", "   \n", "short\n"])
def test_embedded_mode_refuses_a_stored_secret_that_is_empty_or_short(tmp_path, stored):
    # A truncated or hand-edited file must not become an empty admin secret / Flask key.
    var_dir = tmp_path / "var"
    var_dir.mkdir()
    (var_dir / "mojodex_admin_secret").write_text(stored)
    with pytest.raises(ConfigError) as caught:
        load_settings({"MOJODEX_EMBEDDED": "1", "MOJODEX_VAR_DIR": str(var_dir)})
    message = str(caught.value)
    assert message.startswith("MOJODEX_ADMIN_SECRET:")
    assert str(var_dir / "mojodex_admin_secret") in message
    assert "\n" not in message


def _start(code: str, **values: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        env=clean_env(**values),
        cwd=REPO_ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_wsgi_start_with_malformed_port_exits_with_one_line_naming_it(tmp_path):
    proc = _start(
        "import backend.wsgi",
        MOJODEX_PORT="abc",
        MOJODEX_ADMIN_SECRET=ADMIN,
        MOJODEX_SECRET_KEY=KEY,
        DATABASE_URL=f"sqlite:///{tmp_path / 'x.db'}",
    )
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "MOJODEX_PORT" in lines[0] and "'abc'" in lines[0]
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x.db").exists(), "nothing is started before settings are valid"


def test_wsgi_start_without_secrets_names_the_missing_variable(tmp_path):
    proc = _start("import backend.wsgi", DATABASE_URL=f"sqlite:///{tmp_path / 'x.db'}")
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "MOJODEX_ADMIN_SECRET" in lines[0]


def test_cli_serve_with_malformed_setting_exits_2_naming_it(cli):
    result = cli("serve", MOJODEX_PORT="abc", MOJODEX_ADMIN_SECRET=ADMIN, MOJODEX_SECRET_KEY=KEY)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == ["error: MOJODEX_PORT: must be an integer, got 'abc'"]


def test_cli_db_upgrade_with_malformed_database_url_exits_2_naming_it(cli):
    result = cli("db", "upgrade", DATABASE_URL="mysql://x")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: DATABASE_URL:")


@pytest.mark.parametrize(
    ("name", "value"),
    [("REDIS_URL", "unix:///tmp/redis.sock"), ("DATABASE_URL", "postgresql:///mojodex")],
)
def test_urls_without_a_host_that_are_valid_are_accepted(tmp_path, name, value):
    # Before the fix, a unix socket and libpq's local-socket form were refused as "no host".
    settings = load_settings(env(tmp_path, **{name: value}))
    assert (settings.redis_url if name == "REDIS_URL" else settings.database_url).endswith(value.split("://")[1])
