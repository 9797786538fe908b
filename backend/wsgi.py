"""The WSGI app, settings from the environment: the compose file's and the image's command is
`gunicorn -k backend.gevent_worker.QuietQuitGeventWorker -w 1 --worker-connections 1000 --timeout 120
backend.wsgi:app`.

No `--preload`: the gevent worker patches the standard library before it imports this module
(docs/deployment.md, "The backend's worker: gevent")."""

from backend.server import build_app

app = build_app()
