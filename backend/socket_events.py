"""Socket.IO: authenticated connections that join their own sessions' rooms."""

from __future__ import annotations

import logging

from flask import request
from flask_socketio import SocketIO, emit, join_room
from pydantic import ValidationError

from backend.api_models import StartSessionPayload
from backend.auth import token_from_header
from backend.context import Platform
from backend.validation import validation_error
from mojodex_core.db.models import Session
from mojodex_core.users import user_for_token

log = logging.getLogger("mojodex.socket")


def register_socket_events(socketio: SocketIO, platform: Platform, manager: object | None = None) -> None:
    """``manager``: the distributed message-queue manager, told when a socket goes away."""
    users_by_sid: dict[str, str] = {}

    @socketio.on("connect")
    def on_connect(auth=None):  # noqa: ANN001, ANN202
        token = ""
        if isinstance(auth, dict):
            token = token_from_header(str(auth.get("token") or ""))
        with platform.db() as db:
            user = user_for_token(db, token)
            user_id = user.user_id if user else None
        if user_id is None:
            log.info("socket refused: missing or invalid token")
            return False
        users_by_sid[request.sid] = user_id
        if platform.push is not None:
            platform.push.presence.connected(request.sid, user_id)
        return True

    @socketio.on("disconnect")
    def on_disconnect(*_args):  # noqa: ANN002, ANN202
        users_by_sid.pop(request.sid, None)
        if manager is not None:
            manager.forget(request.sid)
        if platform.push is not None:
            platform.push.presence.disconnected(request.sid)

    @socketio.on("start_session")
    def on_start_session(data=None):  # noqa: ANN001, ANN202
        user_id = users_by_sid.get(request.sid)
        try:
            payload = StartSessionPayload.model_validate({} if data is None else data)
        except ValidationError as exc:  # an error acknowledgement, as a REST route answers 400
            return validation_error(exc, "payload").body()
        session_id, last_seq = payload.session_id, payload.last_seq
        with platform.db() as db:
            session = db.get(Session, session_id)
            owned = session is not None and session.user_id == user_id
        if not owned:
            return {"error": "session not found"}
        sid = request.sid
        replayed = platform.events.join_and_replay(
            session_id,
            last_seq,
            join=lambda: join_room(session_id, sid=sid),
            send=lambda name, payload: emit(name, payload, to=sid),
            sid=sid,
        )
        log.info("socket %s joined session %s after seq %d (%d replayed)", sid, session_id, last_seq, replayed)
        return {"session_id": session_id, "replayed": replayed}
