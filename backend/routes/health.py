from __future__ import annotations

from flask_restful import Resource

from backend import api_models as m
from backend.context import platform
from backend.validation import api
from mojodex_core.db import ping


class HealthResource(Resource):
    @api.validate(resp=m.answers(m.HealthOut, "503"), tags=["health"])
    def get(self):  # noqa: ANN201
        current = platform()
        checks: dict[str, str] = {}
        try:
            ping(current.engine)
            checks["database"] = "ok"
        except Exception as exc:  # reported, not raised: this route exists to say what is down
            checks["database"] = f"error: {type(exc).__name__}"
        if current.settings.redis_url:
            try:
                import redis

                redis.Redis.from_url(current.settings.redis_url, socket_timeout=2).ping()
                checks["redis"] = "ok"
            except Exception as exc:
                checks["redis"] = f"error: {type(exc).__name__}"
        else:
            checks["redis"] = "not configured"
        if current.local_model is not None:
            checks["llm"] = current.local_model.status()  # "ok", or "error: <why the local model is down>"
        else:
            checks["llm"] = "configured" if current.llm is not None else "not configured"
        healthy = all(v in ("ok", "not configured", "configured") for v in checks.values())
        return {"status": "ok" if healthy else "error", **checks}, 200 if healthy else 503
