"""A final reply stored while the process stops still gets its push notification."""

from __future__ import annotations

import threading

from mojodex_core.push.notifiers import Notification
from mojodex_core.push.presence import LocalPresence
from mojodex_core.push.service import PushOnFinalReplies


class _Recorder:
    name = "recorder"

    def __init__(self) -> None:
        self.sent: list[Notification] = []
        self.threads: list[str] = []
        self.done = threading.Event()

    def send(self, notification: Notification) -> None:
        self.sent.append(notification)
        self.threads.append(threading.current_thread().name)
        self.done.set()


def test_a_reply_finished_after_the_pool_shut_down_is_still_notified():
    # was: the pool's RuntimeError ("cannot schedule new futures after shutdown") reached the event
    # transport, logged as an ERROR with its traceback, and the user offline was never told
    notifier = _Recorder()
    push = PushOnFinalReplies(factory=None, presence=LocalPresence(), notifier=notifier)  # type: ignore[arg-type]
    push._users["s1"] = "u1"  # the session's user, known already
    push.shutdown()
    assert push.on_final_reply("s1", "mojo_message", {"message_pk": 7, "text": "Done.", "user_task_execution_pk": 3})
    assert notifier.done.wait(10)
    assert [(n.user_id, n.message_pk) for n in notifier.sent] == [("u1", 7)]
    assert notifier.threads != [threading.current_thread().name]  # not on the turn's thread: it holds the stream
