"""What the runner is asked to do."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TurnJob:
    """Answer one user message (a chat message or a submitted form) of a session."""

    session_id: str
    message_pk: int
