"""Audio messages from mobile clients: checked on upload, stored, transcribed off the request thread.

* ``upload``: what an upload may be (size, sniffed format) and its WAV duration, pure;
* ``transcription``: the OpenAI-compatible ``/audio/transcriptions`` client behind a Protocol;
* ``store``: where the uploaded files are kept, one per upload (the row names its own: ``data.audio.file``);
* ``orphans``: files no row names (a process killed mid-upload), deleted at start-up once old;
* ``turn``: the runner handler that transcribes a message before its turn runs.
"""
