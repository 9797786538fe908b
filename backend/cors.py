"""Which web origins may call the API: the server's own, plus MOJODEX_CORS_ORIGINS (docs/security.md).

REST answers cross-origin requests (flask-cors) only for the listed origins; the Socket.IO
handshake refuses any other Origin (before: any Origin was echoed back, with credentials).
Clients that send no Origin (scripts, mobile apps) are not browsers and are not concerned.
"""

from __future__ import annotations

import logging
from typing import Callable

from flask import Flask
from flask_cors import CORS

log = logging.getLogger("mojodex.cors")


def own_origins(environ: dict) -> set[str]:
    """The origin the request was addressed to, directly or through a proxy that says so."""
    host = environ.get("HTTP_HOST")
    if not host:
        return set()
    scheme = environ.get("wsgi.url_scheme", "http")
    origins = {f"{scheme}://{host}"}
    forwarded_host = environ.get("HTTP_X_FORWARDED_HOST", host).split(",")[0].strip()
    forwarded_proto = environ.get("HTTP_X_FORWARDED_PROTO", scheme).split(",")[0].strip()
    origins.add(f"{forwarded_proto}://{forwarded_host}")
    return origins


def socket_origin_check(allowed: tuple[str, ...]) -> Callable[[str | None, dict], bool]:
    listed = set(allowed)

    def check(origin: str | None, environ: dict) -> bool:
        if not origin:
            return True
        ok = origin in listed or origin in own_origins(environ)
        if not ok:
            log.info("socket handshake refused: origin %s is not allowed (MOJODEX_CORS_ORIGINS)", origin[:200])
        return ok

    return check


def install_cors(app: Flask, allowed: tuple[str, ...]) -> None:
    if not allowed:
        return  # same-origin only: no CORS header at all, so browsers keep other origins out
    CORS(
        app,
        origins=list(allowed),
        allow_headers=["Authorization", "Content-Type"],
        expose_headers=["Retry-After"],
        supports_credentials=False,  # the token travels in a header, never in a cookie
        max_age=600,
    )
