"""Order tasks on the platform: the turn handler, live-state store, menus, tickets and webhook.

The conversation itself (states, replies, the order) is the pure engine in
``mojodex_core.order.conversation``; this package is its I/O edge (database, Redis, HTTP).
"""

# event_name of the system messages that carry a global event (silence, barge_in...) to the runner.
ORDER_EVENT = "order_event"
