"""Text edit actions: one-click rewrites of a produced text (shorter, more formal...).

Configured as JSON files in ``tasks_config/text_edit_actions/`` (see docs/edits_chaining_jobs.md):
``spec`` validates them, ``store`` writes and reads them, ``prompt`` renders their Jinja2
template, ``turn`` runs one edit on the session's runner.
"""
