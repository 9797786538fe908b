"""Push notifications: a final reply stored while its user has no open socket is sent through a notifier.

* ``presence``: which users have an open Socket.IO connection (the interface, this process's view);
* ``redis_presence``: the same, shared by backends and workers through Redis (distributed mode);
* ``notifiers``: the pluggable ``Notifier`` Protocol, a webhook notifier and a log notifier;
* ``service``: ``PushOnFinalReplies`` wraps the events transport and decides, per final reply.
"""
