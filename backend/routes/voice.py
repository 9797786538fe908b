"""GET /voice?message_pk=: an assistant reply read aloud (mp3), owner only, when a speech model is set.

The audio is made once through the OpenAI-compatible ``/audio/speech`` endpoint and kept beside the
uploaded audio; later requests read it back.
"""

from __future__ import annotations

import hashlib
import logging

from flask import Response
from flask_restful import Resource
from spectree import Response as Answers
from sqlalchemy import select

from backend import api_models as m
from backend.auth import user_required
from backend.context import platform
from backend.errors import ApiError, not_found
from backend.routes._input import current_user_id, query_int
from backend.validation import USER, api
from mojodex_core.audio.transcription import SpeechError
from mojodex_core.db.models import Message, Session

log = logging.getLogger("mojodex.audio")
# 200 is audio/mpeg; 404 when no speech model is configured (a feature this server lacks is not a
# server error), 502 when the speech service fails.
VOICE_ANSWERS = Answers(HTTP_200=None, **{f"HTTP_{code}": m.ErrorOut for code in (*m.ERROR_CODES, "502")})


class VoiceResource(Resource):
    method_decorators = [user_required]

    @api.validate(query=m.MessagePkQuery, resp=VOICE_ANSWERS, security=USER, tags=["messages"])
    def get(self):  # noqa: ANN201
        message_pk = query_int("message_pk")
        current = platform()
        with current.db() as db:
            row = db.execute(
                select(Message.sender, Message.status, Message.text, Message.session_id, Session.user_id)
                .join(Session, Session.session_id == Message.session_id)
                .where(Message.message_pk == message_pk)
            ).first()
        if row is None or row.user_id != current_user_id():
            raise not_found("message")
        if row.sender != "assistant" or row.status != "final" or not row.text.strip():
            raise ApiError(400, "only an assistant reply can be read aloud", field="message_pk")
        if current.speech is None:
            raise ApiError(404, "voice replies are not configured on this server (set MOJODEX_SPEECH_MODEL)")
        # Keyed by the session (a random id) and the text, not the pk alone: a pk is reused by another
        # database (tests, a restored backup), and the file must never be another message's audio.
        digest = hashlib.sha256(f"{row.session_id}\0{message_pk}\0{row.text}".encode()).hexdigest()[:40]
        name = f"voice_{digest}.mp3"
        try:
            content = current.audio_store.read(name)
        except FileNotFoundError:
            try:
                # Asterisks mark proper nouns for the app's display; they are not to be read out.
                content = current.speech.speak(row.text.replace("*", ""))
            except SpeechError as exc:
                raise ApiError(502, str(exc)) from exc
            current.audio_store.save(name, content)
            log.info("voice made for message %s (%d bytes)", message_pk, len(content))
        return Response(content, mimetype="audio/mpeg")
