"""Settings read from the environment, validated once at start-up.

Every setting has one name, documented in README.md and .env.example. A malformed
value raises ConfigError with one line naming the variable, so start-up fails loudly
instead of half-working.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping
from urllib.parse import urlparse

from mojodex_core.security_config import (
    RateLimitSettings,
    SecurityConfigError,
    load_cors_origins,
    load_rate_limits,
    secret_weakness,
)

PROJECT_ROOT = Path(__file__).resolve().parent.parent
VAR_DIR = PROJECT_ROOT / "var"
DEFAULT_DATABASE_URL = f"sqlite:///{VAR_DIR / 'mojodex.db'}"


class ConfigError(Exception):
    """A setting is missing or malformed; the message names the variable."""


@dataclass(frozen=True)
class LLMConfig:
    base_url: str | None
    api_key: str | None
    model: str
    fallback_model: str | None
    timeout_s: float
    max_retries: int

    @property
    def configured(self) -> bool:
        return bool(self.base_url or self.api_key)


@dataclass(frozen=True)
class Settings:
    database_url: str
    redis_url: str | None
    llm: LLMConfig
    admin_secret: str
    secret_key: str
    host: str
    port: int
    embedded: bool
    tasks_config_dir: Path
    log_level: str
    token_coalesce_ms: int
    turn_timeout_s: float
    var_dir: Path = VAR_DIR
    # Request limits: JSON nesting of a body, characters of a produced text and of a title.
    max_json_depth: int = 64
    max_produced_text_chars: int = 100_000
    max_title_chars: int = 255
    # Order tasks: TTL of the live conversation state in Redis, and the POS webhook delivery.
    order_state_ttl_s: int = 3600
    # HMAC-SHA256 key of the webhook signature; None: generated once and kept in var/.
    pos_webhook_secret: str | None = None
    pos_webhook_attempts: int = 5
    pos_webhook_backoff_s: float = 1.0
    pos_webhook_timeout_s: float = 5.0
    extra: dict = field(default_factory=dict)
    # How tools are offered to the model: auto (native functions and the tag form), tags, functions.
    tool_mode: str = "auto"
    # Tool calls allowed per turn; past it the model is told to answer without tools.
    tool_max_calls: int = 3
    # Default time a tool may run (a task's tool config may set its own timeout_s).
    tool_timeout_s: float = 10.0
    # Security (mojodex_core/security_config.py, docs/security.md): rate limits, the origins
    # allowed besides the server's own, how often open sockets' tokens are checked again.
    rate_limits: RateLimitSettings = field(default_factory=RateLimitSettings)
    cors_origins: tuple[str, ...] = ()
    socket_auth_recheck_s: float = 2.0
    # How long a sign-in's token (POST /login) authenticates; tokens the CLI issues have no expiry.
    login_token_lifetime_days: int = 30
    # Reverse proxies in front of the server whose X-Forwarded-* headers are trusted (0: none,
    # the client address is the TCP peer). Rate limits count per this client address.
    trusted_proxies: int = 0
    # Where turns and jobs run: "thread" (in this process, the default) or "celery" (distributed
    # workers; needs REDIS_URL). See docs/scale_out.md.
    runner: str = "thread"
    # Distributed mode: a session's lease lapses after this long without a heartbeat (the turn is
    # then re-run elsewhere); the sweep looks for such turns this often; token streams expire.
    turn_lease_s: float = 30.0
    sweep_interval_s: float = 5.0
    token_stream_ttl_s: int = 3600
    # Push notifications' shared presence: a backend's sockets stop counting this long after its
    # last renewal (it renews every third of it), e.g. once killed (mojodex_core/push/redis_presence.py).
    presence_ttl_s: float = 30.0
    # Connections each process may open to the database (pool, then overflow): several processes
    # share the server's max_connections (Postgres: 100 by default). No overflow by default: an
    # overflow connection is closed when it is returned to a full pool, so a load that goes above
    # the pool's size and back closed and opened connections all along (on Postgres ~10 % of the
    # CPU of bench/turn_overhead.py's 50 sessions, 94-97 turns/s against 133-143 without overflow).
    db_pool_size: int = 60
    db_max_overflow: int = 0
    # Workflows: an OpenAI-compatible /audio/transcriptions endpoint for recordings (none: transcripts only),
    # and the heartbeat of running steps (a step whose heartbeat is older than the lapse is re-run once).
    transcription_base_url: str | None = None
    transcription_api_key: str | None = None
    transcription_model: str = "whisper-1"
    workflow_heartbeat_s: float = 5.0
    workflow_heartbeat_lapse_s: float = 30.0
    # The largest request that may carry a file (a form start or a restart with a recording); others: 2 MB.
    upload_max_mb: int = 25
    # Audio files no message names (a process killed between writing an upload and committing its
    # row) are deleted at start-up once older than this, so an upload in flight is never touched.
    audio_orphan_grace_s: float = 3600.0

    @property
    def distributed(self) -> bool:
        return self.runner == "celery"

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")


def _int(env: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(f"{name}: must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{name}: must be between {lo} and {hi}, got {value}")
    return value


def _float(env: Mapping[str, str], name: str, default: float, lo: float, hi: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name}: must be a number, got {raw!r}") from None
    if not lo <= value <= hi:
        raise ConfigError(f"{name}: must be between {lo} and {hi}, got {value}")
    return value


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name}: must be true or false, got {raw!r}")


def _choice(env: Mapping[str, str], name: str, default: str, allowed: tuple[str, ...]) -> str:
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return default
    if raw not in allowed:
        raise ConfigError(f"{name}: must be one of {', '.join(allowed)}, got {raw!r}")
    return raw


def _url(env: Mapping[str, str], name: str, schemes: tuple[str, ...]) -> str | None:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return None
    parsed = urlparse(raw)
    scheme = parsed.scheme.split("+")[0]
    if scheme not in schemes:
        raise ConfigError(f"{name}: must be a URL with scheme {' or '.join(schemes)}, got {raw!r}")
    # sqlite paths, unix sockets and libpq's socket form (postgresql:///db) carry no host.
    hostless_ok = scheme in ("sqlite", "unix") or (scheme in ("postgresql", "postgres") and parsed.path.strip("/"))
    if not hostless_ok and not parsed.netloc:
        raise ConfigError(f"{name}: URL has no host, got {raw!r}")
    return raw


def _secret(env: Mapping[str, str], name: str, embedded: bool, var_dir: Path) -> str:
    """Outside the embedded default a secret must be given; embedded, it is kept in var/."""
    raw = env.get(name)
    if raw:
        if len(raw) < 16:
            raise ConfigError(f"{name}: must be at least 16 characters long")
        _refuse_weak(name, raw)
        return raw
    if not embedded:
        raise ConfigError(f"{name}: is required (set it, or run the embedded default with `make run`)")
    path = var_dir / name.lower()
    if path.exists():
        stored = path.read_text().strip()
        if len(stored) < 16:
            raise ConfigError(f"{name}: {path} holds less than 16 characters (delete it to generate a new one)")
        _refuse_weak(name, stored, f" ({path}: delete it to generate a new one)")
        return stored
    var_dir.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(32)
    path.write_text(value + "\n")
    path.chmod(0o600)
    if name == "MOJODEX_ADMIN_SECRET":
        # Printed once, on the run that creates it; later runs read it from var/.
        print(f"Generated admin secret (stored in {path}): {value}", flush=True)
    return value


def _refuse_weak(name: str, value: str, where: str = "") -> None:
    # The admin secret guards every admin route: a guessable one is refused at start-up.
    if name == "MOJODEX_ADMIN_SECRET":
        weakness = secret_weakness(value)
        if weakness:
            raise ConfigError(f"{name}: {weakness}{where}")


def normalise_database_url(url: str) -> str:
    if url.startswith("postgres://"):
        url = "postgresql://" + url[len("postgres://"):]
    if url.startswith("postgresql://"):
        # psycopg 3 is the driver we ship.
        url = "postgresql+psycopg://" + url[len("postgresql://"):]
    return url


def resolve_database_url(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    var_dir = Path(env.get("MOJODEX_VAR_DIR") or VAR_DIR)
    url = _url(env, "DATABASE_URL", ("sqlite", "postgresql", "postgres"))
    return normalise_database_url(url or f"sqlite:///{var_dir / 'mojodex.db'}")


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    env = os.environ if env is None else env
    embedded = _bool(env, "MOJODEX_EMBEDDED", False)
    var_dir = Path(env.get("MOJODEX_VAR_DIR") or VAR_DIR)
    database_url = resolve_database_url(env)
    log_level = (env.get("MOJODEX_LOG_LEVEL") or "INFO").upper()
    if log_level not in ("DEBUG", "INFO", "WARNING", "ERROR"):
        raise ConfigError(f"MOJODEX_LOG_LEVEL: must be one of DEBUG, INFO, WARNING, ERROR, got {log_level!r}")
    llm = LLMConfig(
        base_url=_url(env, "MOJODEX_LLM_BASE_URL", ("http", "https")),
        api_key=env.get("MOJODEX_LLM_API_KEY") or env.get("OPENAI_API_KEY") or None,
        model=env.get("MOJODEX_LLM_MODEL") or "gpt-4o-mini",
        fallback_model=env.get("MOJODEX_LLM_FALLBACK_MODEL") or None,
        timeout_s=_float(env, "MOJODEX_LLM_TIMEOUT_S", 60.0, 1.0, 600.0),
        max_retries=_int(env, "MOJODEX_LLM_MAX_RETRIES", 3, 0, 10),
    )
    tasks_dir = Path(env.get("MOJODEX_TASKS_CONFIG_DIR") or PROJECT_ROOT / "tasks_config")
    port = _int(env, "MOJODEX_PORT", 5001, 1, 65535)
    try:
        rate_limits = load_rate_limits(env, _bool(env, "MOJODEX_RATE_LIMITS_ENABLED", True))
        cors_origins = load_cors_origins(env, embedded, port)
    except SecurityConfigError as exc:
        raise ConfigError(str(exc)) from None
    runner = _choice(env, "MOJODEX_RUNNER", "thread", ("thread", "celery"))
    redis_url = _url(env, "REDIS_URL", ("redis", "rediss", "unix"))
    if runner == "celery" and not redis_url:
        raise ConfigError("MOJODEX_RUNNER: celery needs REDIS_URL (the broker, message queue and token streams)")
    return Settings(
        database_url=database_url,
        redis_url=redis_url,
        llm=llm,
        admin_secret=_secret(env, "MOJODEX_ADMIN_SECRET", embedded, var_dir),
        secret_key=_secret(env, "MOJODEX_SECRET_KEY", embedded, var_dir),
        host=env.get("MOJODEX_HOST") or "127.0.0.1",
        port=port,
        embedded=embedded,
        tasks_config_dir=tasks_dir,
        log_level=log_level,
        token_coalesce_ms=_int(env, "MOJODEX_TOKEN_COALESCE_MS", 30, 0, 1000),
        turn_timeout_s=_float(env, "MOJODEX_TURN_TIMEOUT_S", 180.0, 1.0, 3600.0),
        var_dir=var_dir,
        max_json_depth=_int(env, "MOJODEX_MAX_JSON_DEPTH", 64, 4, 512),
        max_produced_text_chars=_int(env, "MOJODEX_MAX_PRODUCED_TEXT_CHARS", 100_000, 100, 1_000_000),
        max_title_chars=_int(env, "MOJODEX_MAX_TITLE_CHARS", 255, 16, 255),
        order_state_ttl_s=_int(env, "MOJODEX_ORDER_STATE_TTL_S", 3600, 1, 7 * 24 * 3600),
        pos_webhook_secret=env.get("MOJODEX_POS_WEBHOOK_SECRET") or None,
        pos_webhook_attempts=_int(env, "MOJODEX_POS_WEBHOOK_ATTEMPTS", 5, 1, 20),
        pos_webhook_backoff_s=_float(env, "MOJODEX_POS_WEBHOOK_BACKOFF_S", 1.0, 0.0, 600.0),
        pos_webhook_timeout_s=_float(env, "MOJODEX_POS_WEBHOOK_TIMEOUT_S", 5.0, 0.1, 120.0),
        tool_mode=_choice(env, "MOJODEX_LLM_TOOL_MODE", "auto", ("auto", "tags", "functions")),
        tool_max_calls=_int(env, "MOJODEX_TOOL_MAX_CALLS", 3, 0, 20),
        tool_timeout_s=_float(env, "MOJODEX_TOOL_TIMEOUT_S", 10.0, 0.1, 600.0),
        rate_limits=rate_limits,
        cors_origins=cors_origins,
        socket_auth_recheck_s=_float(env, "MOJODEX_SOCKET_AUTH_RECHECK_S", 2.0, 0.1, 300.0),
        login_token_lifetime_days=_int(env, "MOJODEX_LOGIN_TOKEN_LIFETIME_DAYS", 30, 1, 3650),
        trusted_proxies=_int(env, "MOJODEX_TRUSTED_PROXIES", 0, 0, 5),
        runner=runner,
        turn_lease_s=_float(env, "MOJODEX_TURN_LEASE_S", 30.0, 1.0, 3600.0),
        sweep_interval_s=_float(env, "MOJODEX_SWEEP_INTERVAL_S", 5.0, 0.2, 3600.0),
        token_stream_ttl_s=_int(env, "MOJODEX_TOKEN_STREAM_TTL_S", 3600, 10, 7 * 24 * 3600),
        presence_ttl_s=_float(env, "MOJODEX_PRESENCE_TTL_S", 30.0, 3.0, 3600.0),
        db_pool_size=_int(env, "MOJODEX_DB_POOL_SIZE", 60, 1, 500),
        db_max_overflow=_int(env, "MOJODEX_DB_MAX_OVERFLOW", 0, 0, 1000),
        transcription_base_url=_url(env, "MOJODEX_TRANSCRIPTION_BASE_URL", ("http", "https")),
        transcription_api_key=env.get("MOJODEX_TRANSCRIPTION_API_KEY") or None,
        transcription_model=env.get("MOJODEX_TRANSCRIPTION_MODEL") or "whisper-1",
        workflow_heartbeat_s=_float(env, "MOJODEX_WORKFLOW_HEARTBEAT_S", 5.0, 0.05, 600.0),
        workflow_heartbeat_lapse_s=_float(env, "MOJODEX_WORKFLOW_HEARTBEAT_LAPSE_S", 30.0, 0.2, 7200.0),
        upload_max_mb=_int(env, "MOJODEX_UPLOAD_MAX_MB", 25, 1, 1024),
        audio_orphan_grace_s=_float(env, "MOJODEX_AUDIO_ORPHAN_GRACE_S", 3600.0, 60.0, 30 * 24 * 3600.0),
    )


def webhook_secret(settings: Settings) -> str:
    """The POS webhook signing key: the setting, else one generated once and kept in var/."""
    if settings.pos_webhook_secret:
        return settings.pos_webhook_secret
    path = settings.var_dir / "mojodex_pos_webhook_secret"
    if path.exists():
        stored = path.read_text().strip()
        if len(stored) >= 16:
            return stored
    settings.var_dir.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(32)
    path.write_text(value + "\n")
    path.chmod(0o600)
    return value
