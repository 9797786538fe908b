"""Routes a runner job to the handler for the kind of user message it answers.

Every job answers one user message (a TurnJob); what answers it depends on the message's
event_name: a text edit action has its own handler, everything else goes to the default
(the instruct turn). Reading the kind from the stored message keeps the runner and the
start-up resumption unaware of the kinds.
"""

from __future__ import annotations

import threading
from typing import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session as DbSession
from sqlalchemy.orm import sessionmaker

from mojodex_core.db.models import Message
from mojodex_core.execution.jobs import TurnJob

Handler = Callable[[TurnJob, threading.Event], None]


class MessageKindDispatcher:
    def __init__(
        self, session_factory: sessionmaker[DbSession], default: Handler, by_event_name: dict[str, Handler]
    ) -> None:
        self._factory = session_factory
        self._default = default
        self._by_event_name = by_event_name

    def __call__(self, job: TurnJob, cancel: threading.Event) -> None:
        event_name = job.event_name
        if event_name is None:
            with self._factory() as db:
                event_name = db.scalar(select(Message.event_name).where(Message.message_pk == job.message_pk))
        self._by_event_name.get(event_name, self._default)(job, cancel)
