"""Security settings: a guessable admin secret is refused at start-up; limits and origins are checked."""

from __future__ import annotations

import pytest

from mojodex_core.config import ConfigError, load_settings
from tests.foundation.conftest import clean_env, run_mojodex

KEY = "secret-key-0123456789abcdef"
STRONG = "admin-secret-0123456789abcdef"


def env(tmp_path, **values: str) -> dict[str, str]:
    return {"MOJODEX_ADMIN_SECRET": STRONG, "MOJODEX_SECRET_KEY": KEY, "MOJODEX_VAR_DIR": str(tmp_path / "var"),
            **values}


@pytest.mark.parametrize("weak", ["aaaaaaaaaaaaaaaa", "abababababababab", "password12345678", "0123456789abcdef"])
def test_a_guessable_admin_secret_is_refused_saying_why(tmp_path, weak):
    with pytest.raises(ConfigError) as info:
        load_settings(env(tmp_path, MOJODEX_ADMIN_SECRET=weak))
    message = str(info.value)
    assert message.startswith("MOJODEX_ADMIN_SECRET: too easy to guess")
    assert "2^40" in message and "token_urlsafe" in message


def test_a_random_sixteen_character_secret_is_accepted(tmp_path):
    assert load_settings(env(tmp_path, MOJODEX_ADMIN_SECRET="f3a9c1e07b5d2846")).admin_secret == "f3a9c1e07b5d2846"


def test_a_weak_secret_stored_in_var_is_refused_in_embedded_mode(tmp_path):
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "mojodex_admin_secret").write_text("aaaaaaaaaaaaaaaaaaaa\n")
    with pytest.raises(ConfigError, match="too easy to guess.*delete it"):
        load_settings({"MOJODEX_EMBEDDED": "1", "MOJODEX_VAR_DIR": str(tmp_path / "var")})


def test_embedded_mode_still_generates_a_strong_secret(tmp_path):
    settings = load_settings({"MOJODEX_EMBEDDED": "1", "MOJODEX_VAR_DIR": str(tmp_path / "var")})
    assert len(settings.admin_secret) >= 40
    assert settings.cors_origins == ("http://127.0.0.1:5001", "http://localhost:5001")


def test_the_server_refuses_to_start_with_a_weak_admin_secret(tmp_path):
    result = run_mojodex(["serve"], clean_env(**env(tmp_path, MOJODEX_ADMIN_SECRET="aaaaaaaaaaaaaaaa")), timeout=60)
    assert result.returncode == 2
    assert "MOJODEX_ADMIN_SECRET: too easy to guess" in result.stderr


def test_rate_limits_and_origins_are_read_and_checked(tmp_path):
    settings = load_settings(env(
        tmp_path, MOJODEX_RATE_LIMIT_AUTH_FAILURES="5/second;50/hour", MOJODEX_RATE_LIMIT_MESSAGES="3/minute",
        MOJODEX_CORS_ORIGINS="https://app.example.com, http://localhost:3000/", MOJODEX_RATE_LIMITS_ENABLED="0",
    ))
    assert settings.rate_limits.auth_failures_per_address == "5/second;50/hour"
    assert settings.rate_limits.message_sends == "3/minute"
    assert settings.rate_limits.admin == "60/minute"  # the default
    assert settings.rate_limits.enabled is False
    assert settings.cors_origins == ("https://app.example.com", "http://localhost:3000")
    assert load_settings(env(tmp_path)).cors_origins == ()  # same-origin only outside make run


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("MOJODEX_RATE_LIMIT_ADMIN", "lots", "MOJODEX_RATE_LIMIT_ADMIN: must be a rate limit"),
        ("MOJODEX_CORS_ORIGINS", "*", "'*' is not allowed"),
        ("MOJODEX_CORS_ORIGINS", "app.example.com", "must look like https://"),
        ("MOJODEX_SOCKET_AUTH_RECHECK_S", "0", "between 0.1 and 300"),
    ],
)
def test_malformed_security_settings_name_the_variable(tmp_path, name, value, expected):
    with pytest.raises(ConfigError, match=expected.replace("*", r"\*").replace("^", r"\^")):
        load_settings(env(tmp_path, **{name: value}))
