"""`gunicorn -k gevent -w 1 --worker-connections 1000 --timeout 120 backend.wsgi:app` (settings from the environment).

No `--preload`: the gevent worker patches the standard library before it imports this module
(docs/deployment.md, "The backend's worker: gevent")."""

from backend.server import build_app

app = build_app()
