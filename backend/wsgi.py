"""`gunicorn -k gthread -w 1 --threads 100 backend.wsgi:app` (settings from the environment)."""

from backend.server import build_app

app = build_app()
