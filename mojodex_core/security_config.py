"""Security settings: rate limits, CORS origins, and how guessable the admin secret may be.

Read from the environment by ``load_settings`` (mojodex_core/config.py); documented in
README.md (Configuration) and docs/security.md. No Flask here: the backend applies them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import urlparse

# The admin secret must need at least this many guesses (log2) by zxcvbn's estimate: a
# 16-character random hex string scores about 43, "aaaaaaaaaaaaaaaa" about 8.
MIN_ADMIN_SECRET_BITS = 40


class SecurityConfigError(ValueError):
    """A malformed security setting; the message names the variable."""


@dataclass(frozen=True)
class RateLimitSettings:
    """Limits in the `limits` notation ("20/minute", "5/second;100/hour"); see docs/security.md."""

    enabled: bool = True
    # Failed authentications (bad token or admin secret), per client address.
    auth_failures_per_address: str = "20/minute"
    # Failed authentications per token prefix (its first 8 characters), whatever the address.
    auth_failures_per_token_prefix: str = "10/minute"
    # Every request to an admin route, per client address.
    admin: str = "60/minute"
    # PUT /user_message, per user.
    message_sends: str = "30/minute"
    # Failed sign-ins (POST /login), per email and per client address.
    login_failures_per_email: str = "5/minute"
    login_failures_per_address: str = "30/minute"


# name of the field -> environment variable
RATE_LIMIT_VARIABLES = {
    "auth_failures_per_address": "MOJODEX_RATE_LIMIT_AUTH_FAILURES",
    "auth_failures_per_token_prefix": "MOJODEX_RATE_LIMIT_TOKEN_PREFIX_FAILURES",
    "admin": "MOJODEX_RATE_LIMIT_ADMIN",
    "message_sends": "MOJODEX_RATE_LIMIT_MESSAGES",
    "login_failures_per_email": "MOJODEX_RATE_LIMIT_LOGIN_FAILURES_PER_EMAIL",
    "login_failures_per_address": "MOJODEX_RATE_LIMIT_LOGIN_FAILURES_PER_ADDRESS",
}


def _limit(env: Mapping[str, str], name: str, default: str) -> str:
    from limits import parse_many

    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        parse_many(raw)
    except ValueError:
        raise SecurityConfigError(
            f"{name}: must be a rate limit like '20/minute' or '5/second;100/hour', got {raw!r}"
        ) from None
    return raw


def load_rate_limits(env: Mapping[str, str], enabled: bool) -> RateLimitSettings:
    defaults = RateLimitSettings()
    values = {field: _limit(env, var, getattr(defaults, field)) for field, var in RATE_LIMIT_VARIABLES.items()}
    return RateLimitSettings(enabled=enabled, **values)


def load_cors_origins(env: Mapping[str, str], embedded: bool, port: int) -> tuple[str, ...]:
    """MOJODEX_CORS_ORIGINS: comma-separated origins (scheme://host[:port]) allowed besides the
    server's own. Unset: same-origin only, plus the web app's origin under `make run`."""
    raw = env.get("MOJODEX_CORS_ORIGINS")
    if raw is None or not raw.strip():
        if embedded:
            return (f"http://127.0.0.1:{port}", f"http://localhost:{port}")
        return ()
    origins = []
    for item in (part.strip() for part in raw.split(",")):
        if not item:
            continue
        if item == "*":
            raise SecurityConfigError(
                "MOJODEX_CORS_ORIGINS: '*' is not allowed (tokens travel with these requests); list the origins"
            )
        parsed = urlparse(item)
        if parsed.scheme not in ("http", "https") or not parsed.netloc or parsed.path not in ("", "/"):
            raise SecurityConfigError(
                f"MOJODEX_CORS_ORIGINS: each origin must look like https://app.example.com[:port], got {item!r}"
            )
        origins.append(f"{parsed.scheme}://{parsed.netloc}")
    return tuple(origins)


def secret_weakness(secret: str) -> str | None:
    """Why a secret is too easy to guess, or None. zxcvbn estimates the guesses an attacker needs
    (repeats, sequences, keyboard walks and common words count for little)."""
    from zxcvbn import zxcvbn

    result = zxcvbn(secret[:100])  # zxcvbn is quadratic in length; 100 characters says enough
    bits = math.log2(max(float(result["guesses"]), 1.0))
    if bits >= MIN_ADMIN_SECRET_BITS:
        return None
    hint = (result.get("feedback") or {}).get("warning") or "too few distinct, unpredictable characters"
    return (
        f"too easy to guess (about 2^{bits:.0f} guesses, at least 2^{MIN_ADMIN_SECRET_BITS} required: {hint}); "
        "use a random value, e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'"
    )
