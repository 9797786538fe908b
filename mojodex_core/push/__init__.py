"""Push notifications: a final reply stored while its user has no open socket is sent through a notifier.

* ``presence``: which users have an open Socket.IO connection (this process's view);
* ``notifiers``: the pluggable ``Notifier`` Protocol, a webhook notifier and a log notifier;
* ``service``: ``PushOnFinalReplies`` wraps the events transport and decides, per final reply.
"""
