"""gunicorn's gevent worker, quitting without a traceback on Ctrl-C, its own errors in JSON.

On SIGINT or SIGQUIT gunicorn's gevent worker spawns a greenlet that calls ``sys.exit(0)``, and
gevent reports the SystemExit of that greenlet as a failure, traceback and all
(benoitc/gunicorn#3239): every Ctrl-C of `make run` ended its log with one. The same quick exit is
raised here in the worker's main greenlet, where it is an ordinary exit. (`docker stop` sends
SIGTERM, the graceful stop, which never took that path; `docker run -it` and Ctrl-C did.)

The requests gunicorn rejects before the app (a header line too large, a request line too long...)
are answered `{"error": ...}` in JSON as every error of the API, not with gunicorn's HTML page
(backend/gunicorn_errors.py).
"""

from __future__ import annotations

import gevent
from gunicorn.workers.ggevent import GeventWorker

from backend.gunicorn_errors import JsonErrorAnswers

# gunicorn's -k / worker_class for every entry point: `mojodex serve`, the compose file, the image.
WORKER_CLASS = "backend.gevent_worker.QuietQuitGeventWorker"


class QuietQuitGeventWorker(JsonErrorAnswers, GeventWorker):
    def handle_quit(self, sig, frame) -> None:  # noqa: ANN001 - gunicorn's signal handler signature
        # As gunicorn's: not in the signal handler itself (the hub may be running), in a greenlet.
        gevent.spawn(self._quit)

    def _quit(self) -> None:
        if not self.alive:
            return  # the second of the terminal's SIGINT and the master's SIGQUIT: already quitting
        # What gunicorn's base worker does on quit (no more accepting, the worker_int hook), then
        # the exit, raised at once in the worker's main greenlet (still in its loop: raised later,
        # it could land in the interpreter's own shutdown, and gevent would report it there).
        self.alive = False
        self.cfg.worker_int(self)
        gevent.get_hub().parent.throw(SystemExit(0))
