"""What the runner is asked to do."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class TurnJob:
    """Answer one user message (a chat message or a submitted form) of a session."""

    session_id: str
    message_pk: int
    # Set for the follow-up turn of a tool use the user approved or declined (same session queue).
    task_tool_execution_pk: int | None = None
    # The message's event_name when the submitter knows it (saves the runner a query); not part of
    # the job's identity.
    event_name: str | None = field(default=None, compare=False)
