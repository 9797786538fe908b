"""Socket.IO: authenticated connections that join their own sessions' rooms.

A connection authenticates with its token; failed attempts count against the same rate
limits as REST (backend/rate_limits.py). The token is checked again at every
`start_session` and every few seconds while the socket is open (backend/socket_auth.py).
"""

from __future__ import annotations

import logging

from flask import request
from flask_socketio import ConnectionRefusedError, SocketIO, emit, join_room
from pydantic import ValidationError

from backend.api_models import StartSessionPayload
from backend.auth import refusal, token_from_header
from backend.context import Platform
from backend.errors import DATABASE_UNAVAILABLE, ApiError, database_unavailable, describe_database_error
from backend.rate_limits import client_address, rate_limits
from backend.socket_auth import SocketTokens, ending, replay_sender
from backend.validation import validation_error
from mojodex_core.execution.session_access import live_session
from mojodex_core.users import ended_tokens, hash_token, read_token

log = logging.getLogger("mojodex.socket")


def register_socket_events(socketio: SocketIO, platform: Platform, manager: object | None = None) -> SocketTokens:
    """``manager``: the distributed message-queue manager, told when a socket goes away.
    Returns the open sockets' tokens (checked again every MOJODEX_SOCKET_AUTH_RECHECK_S)."""
    users_by_sid: dict[str, str] = {}
    tokens = SocketTokens(socketio, platform, platform.settings.socket_auth_recheck_s)

    @socketio.on("connect")
    def on_connect(auth=None):  # noqa: ANN001, ANN202
        token = ""
        if isinstance(auth, dict):
            token = token_from_header(str(auth.get("token") or ""))
        limits, address = rate_limits(), client_address()
        try:
            limits.before_authentication(address, token)
            with platform.db() as db:
                read = read_token(db, token)  # one statement, whether the token is accepted or not
        except ApiError as exc:  # throttled
            raise ConnectionRefusedError(exc.message, exc.body()) from None
        except Exception as exc:
            if not database_unavailable(exc):
                raise
            log.error("socket refused: %s (%s)", DATABASE_UNAVAILABLE, describe_database_error(exc))
            raise ConnectionRefusedError(DATABASE_UNAVAILABLE, {"error": DATABASE_UNAVAILABLE}) from None
        if read.holder is None:
            limits.authentication_failed(address, token)
            reason = refusal(read)
            log.info("socket refused: %s", reason)
            raise ConnectionRefusedError(reason, {"error": reason})
        user_id = read.holder.user_id
        users_by_sid[request.sid] = user_id
        tokens.add(request.sid, hash_token(token))
        if platform.push is not None:
            platform.push.presence.connected(request.sid, user_id)
        return True

    @socketio.on("disconnect")
    def on_disconnect(*_args):  # noqa: ANN002, ANN202
        users_by_sid.pop(request.sid, None)
        tokens.remove(request.sid)
        if manager is not None:
            manager.forget(request.sid)
        if platform.push is not None:
            platform.push.presence.disconnected(request.sid)

    @socketio.on("start_session")
    def on_start_session(data=None):  # noqa: ANN001, ANN202
        sid = request.sid
        user_id = users_by_sid.get(sid)
        try:
            payload = StartSessionPayload.model_validate({} if data is None else data)
        except ValidationError as exc:  # an error acknowledgement, as a REST route answers 400
            return validation_error(exc, "payload").body()
        session_id, last_seq = payload.session_id, payload.last_seq
        token_hash = tokens.token_hash(sid)
        try:
            with platform.db() as db:
                ended = {} if token_hash is None else ended_tokens(db, [token_hash])
                revoked = token_hash is None or token_hash in ended
                session = None if revoked else live_session(db, session_id)
                owned = session is not None and session.user_id == user_id
        except Exception as exc:
            if not database_unavailable(exc):
                raise
            log.error("start_session: %s (%s)", DATABASE_UNAVAILABLE, describe_database_error(exc))
            return {"error": DATABASE_UNAVAILABLE}
        if revoked:  # or expired: the answer says which
            expired = ended.get(token_hash, False)
            tokens.end(sid, delay_s=0.2, expired=expired)  # after this acknowledgement
            return {"error": ending(expired)}
        if not owned:
            return {"error": "session not found"}
        replayed = platform.events.join_and_replay(
            session_id,
            last_seq,
            join=lambda: join_room(session_id, sid=sid),
            send=replay_sender(socketio, sid, lambda name, payload: emit(name, payload, to=sid)),
            sid=sid,
        )
        log.info("socket %s joined session %s after seq %d (%d replayed)", sid, session_id, last_seq, replayed)
        return {"session_id": session_id, "replayed": replayed}

    return tokens
