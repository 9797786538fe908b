"""`gunicorn -k gevent -w 1 --worker-connections 1000 backend.wsgi:app` (settings from the environment)."""

from backend.server import build_app

app = build_app()
