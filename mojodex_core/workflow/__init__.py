"""Workflow tasks: ordered steps from the steps library, fan-out, user validation, review chat.

- ``steps``: the steps library (one file per step), ``engine``: what runs next (pure),
- ``store``: step executions in the database, ``service``: what the routes change,
- ``runner``: the "workflow" turn handler, ``review``: the review chat, ``heartbeat``: crash recovery.
See docs/workflows.md.
"""
