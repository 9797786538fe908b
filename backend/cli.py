"""The `mojodex` command: database, tasks, users, order tools, and the server.

Exit codes: 0 success, 1 runtime failure, 2 bad input (a rejected spec, an unknown user).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from mojodex_core.config import ConfigError, load_settings, resolve_database_url
from mojodex_core.order.cli import order

if TYPE_CHECKING:
    from mojodex_core.task_spec import SpecIssue, TaskSpec


def _fail(message: str, code: int = 2) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _settings():  # noqa: ANN202
    try:
        return load_settings()
    except ConfigError as exc:
        _fail(str(exc))


def _session_factory():  # noqa: ANN202
    from mojodex_core.db import make_engine, make_session_factory

    try:
        url = resolve_database_url()
    except ConfigError as exc:
        _fail(str(exc))
    return make_session_factory(make_engine(url))


@click.group()
def main() -> None:
    """Mojodex platform administration."""
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")


# --- database
@main.group()
def db() -> None:
    """Database schema."""


@db.command("upgrade")
@click.option("--revision", default="head", show_default=True)
def db_upgrade(revision: str) -> None:
    """Apply Alembic migrations to DATABASE_URL."""
    from mojodex_core.db.migrate import upgrade

    try:
        url = resolve_database_url()
    except ConfigError as exc:
        _fail(str(exc))
    upgrade(url, revision)
    click.echo(f"database at {url.split('@')[-1]} is at {revision}")


# --- tasks
@main.group()
def tasks() -> None:
    """Task specs (admin configuration)."""


@tasks.command("load")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--tasks-config-dir", type=click.Path(path_type=Path), default=None,
              help="Folder menus are resolved against (default: the folder of each spec file).")
def tasks_load(paths: tuple[Path, ...], tasks_config_dir: Path | None) -> None:
    """Create or update tasks from spec files or folders, one transaction per file.

    Every file is checked first, then the set as a whole (names unique, each predefined action naming a
    task of the set or one already stored), so a file may name a task of a file loaded after it. A file
    given twice (a folder and a file in it) is loaded once.
    """
    from mojodex_core.db import transaction
    from mojodex_core.task_loader import TaskConflict, check_set, spec_files, store_spec, validate_for_storage
    from mojodex_core.task_spec import SpecError
    from mojodex_core.text_edit.store import text_edit_action_files

    factory = _session_factory()
    edit_files = text_edit_action_files(list(paths))
    failed = 0

    valid: list[tuple[Path, TaskSpec]] = []
    seen: set[Path] = set()
    for path in spec_files(list(paths)):
        if path in edit_files or path.resolve() in seen:
            continue  # a text edit action (loaded below), or a file given twice
        seen.add(path.resolve())
        try:
            data = json.loads(path.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            click.echo(f"{path}: <file>: not valid JSON: {exc}", err=True)
            failed += 1
            continue
        try:
            valid.append((path, validate_for_storage(data, tasks_config_dir or path.parent)))
        except SpecError as exc:
            _print_issues(path, exc.errors)
            failed += 1
    with factory() as session:
        across = check_set(session, {str(path): spec for path, spec in valid})
    for path, spec in valid:
        if str(path) in across:
            _print_issues(path, across[str(path)])
            failed += 1
            continue
        try:
            with transaction(factory) as session:
                _task, created = store_spec(session, spec, "upsert")
        except TaskConflict as exc:
            click.echo(f"{path}: {exc}", err=True)
            failed += 1
            continue
        click.echo(f"{'created' if created else 'updated'} {spec.name_for_system} ({spec.task_type}) from {path}")
    failed += _load_text_edit_actions(factory, edit_files)
    if failed:
        _fail(f"{failed} spec file(s) rejected; nothing was stored from them")


def _print_issues(path: Path, issues: list[SpecIssue]) -> None:
    for issue in issues:
        click.echo(f"{path}: {issue.path}: {issue.rule}", err=True)


def _load_text_edit_actions(factory, files: list[Path]) -> int:  # noqa: ANN001
    """Upserts text edit actions, one transaction per file; returns how many were rejected."""
    from mojodex_core.db import transaction
    from mojodex_core.task_spec import SpecError
    from mojodex_core.text_edit.spec import validate_text_edit_action
    from mojodex_core.text_edit.store import store_text_edit_action

    failed = 0
    for path in files:
        try:
            spec = validate_text_edit_action(json.loads(path.read_text(encoding="utf-8-sig")))
            with transaction(factory) as session:
                _action, created = store_text_edit_action(session, spec)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            click.echo(f"{path}: <file>: not valid JSON: {exc}", err=True)
            failed += 1
            continue
        except SpecError as exc:
            _print_issues(path, exc.errors)
            failed += 1
            continue
        click.echo(f"{'created' if created else 'updated'} text edit action {spec.name} from {path}")
    return failed


# --- users
@main.group()
def users() -> None:
    """Users and their tokens."""


@users.command("create")
@click.option("--name", required=True)
@click.option("--email", required=True)
@click.option("--language", default="en", show_default=True)
@click.option("--password", default=None, envvar="MOJODEX_USER_PASSWORD",
              help="Lets the user sign in to the web app with email and password (at least 8 characters).")
def users_create(name: str, email: str, language: str, password: str | None) -> None:
    """Create a user; prints its API token once, alone on the last line."""
    from mojodex_core.db import transaction
    from mojodex_core.passwords import set_password
    from mojodex_core.users import UserError, create_user, issue_token

    try:
        with transaction(_session_factory()) as session:
            user = create_user(session, name=name, email=email, language_code=language)
            if password is not None:
                set_password(user, password)
            token = issue_token(session, user)
    except UserError as exc:
        _fail(str(exc))
    click.echo(f"created user {user.email} ({user.user_id}); API token (shown once):")
    click.echo(token)


@users.command("set-password")
@click.option("--email", required=True)
@click.option("--password", required=True, envvar="MOJODEX_USER_PASSWORD", prompt=True, hide_input=True,
              help="At least 8 characters.")
@click.option("--keep-sessions", is_flag=True,
              help="Keep the user's tokens (by default a new password signs the user out everywhere).")
def users_set_password(email: str, password: str, keep_sessions: bool) -> None:
    """Set (or change) the password a user signs in to the web app with; signs them out everywhere."""
    from mojodex_core.db import transaction
    from mojodex_core.passwords import set_password
    from mojodex_core.users import UserError, find_user, revoke_tokens

    try:
        with transaction(_session_factory()) as session:
            set_password(find_user(session, email), password)
            revoked = [] if keep_sessions else revoke_tokens(session, email=email)
    except UserError as exc:
        _fail(str(exc))
    click.echo(f"password set for {email}" + ("" if keep_sessions else f"; {len(revoked)} token(s) revoked"))


@users.command("grant")
@click.option("--user", "email", required=True, help="The user's email.")
@click.option("--task", "task_names", multiple=True, help="name_for_system of a task (repeatable).")
@click.option("--all", "all_tasks", is_flag=True, help="Every task.")
def users_grant(email: str, task_names: tuple[str, ...], all_tasks: bool) -> None:
    """Let a user run tasks."""
    from mojodex_core.db import transaction
    from mojodex_core.users import UserError, find_user, grant

    if bool(task_names) == all_tasks:
        _fail("give either --task NAME (one or more) or --all")
    try:
        with transaction(_session_factory()) as session:
            granted = grant(session, find_user(session, email), None if all_tasks else list(task_names))
    except UserError as exc:
        _fail(str(exc))
    click.echo(f"granted {len(granted)} task(s) to {email}: {', '.join(granted) or '(already had them)'}")


@users.command("issue-token")
@click.option("--user", "email", required=True, help="The user's email.")
@click.option("--label", default="api client", show_default=True, help="What the token is for (listed when revoked).")
@click.option("--days", type=click.IntRange(min=1, max=3650), default=None,
              help="The token stops authenticating after this many days (default: it lives until revoked).")
@click.option("--revoke", "old_token", default=None,
              help="A token of the same user to revoke in the same transaction (rotation).")
def users_issue_token(email: str, label: str, days: int | None, old_token: str | None) -> None:
    """Issue an API token for an existing user; prints it once, alone on the last line. With --revoke OLD,
    the old token is revoked in the same transaction: a rotation never leaves the client without a token."""
    from datetime import UTC, datetime, timedelta

    from mojodex_core.db import transaction
    from mojodex_core.users import UserError, find_user, issue_token, revoke_tokens, user_for_token

    label = label.strip()
    if not label or len(label) > 255:
        _fail("--label must be 1 to 255 characters")
    if label == "login":  # POST /logout revokes a sign-in's own token by this label
        _fail("--label 'login' is reserved for sign-in tokens")
    expires_at = datetime.now(UTC) + timedelta(days=days) if days is not None else None
    try:
        with transaction(_session_factory()) as session:
            user = find_user(session, email)
            revoked = []
            if old_token is not None:
                owner = user_for_token(session, old_token.strip())
                if owner is None or owner.user_id != user.user_id:
                    raise UserError("--revoke: no live token of this user")
                revoked = revoke_tokens(session, token=old_token.strip())
            token = issue_token(session, user, label=label, expires_at=expires_at)
    except UserError as exc:
        _fail(str(exc))
    lifetime = f"expires {expires_at:%Y-%m-%d %H:%M} UTC" if expires_at else "lives until revoked"
    click.echo(f"issued token '{label}' for {email} ({lifetime})"
               + (f"; revoked {len(revoked)} old token(s)" if revoked else "") + "; API token (shown once):")
    click.echo(token)


@users.command("revoke-token")
@click.option("--token", default=None, help="The token to revoke (as the user sends it).")
@click.option("--user", "email", default=None, help="A user's email: revokes every token of this user.")
def users_revoke_token(token: str | None, email: str | None) -> None:
    """Revoke a token, or every token of a user. REST refuses it at once; the server closes its open
    sockets within MOJODEX_SOCKET_AUTH_RECHECK_S seconds (2 by default)."""
    from mojodex_core.db import transaction
    from mojodex_core.users import UserError, revoke_tokens, stored_token_expired

    if (token is None) == (email is None):
        _fail("give either --token TOKEN or --user EMAIL")
    try:
        with transaction(_session_factory()) as session:
            revoked = revoke_tokens(session, token=token, email=email)  # expired tokens are not live
            labels = [f"{row.label} (created {row.created_at:%Y-%m-%d})" for row in revoked]
            expired = token is not None and not revoked and stored_token_expired(session, token)
    except UserError as exc:
        _fail(str(exc))
    if not revoked:
        if token is None:
            click.echo(f"nothing to revoke: {email} has no live token")
        elif expired:
            click.echo("nothing to revoke: the token has expired")
        else:
            click.echo("nothing to revoke: the token was revoked already")
        return
    click.echo(f"revoked {len(revoked)} token(s): {', '.join(labels)}")


@users.command("demo")
@click.option("--email", default="demo@mojodex.local", show_default=True)
def users_demo(email: str) -> None:
    """Ensure a demo user with every task; prints its token (kept in $MOJODEX_VAR_DIR/demo_token)."""
    import os

    from mojodex_core.config import VAR_DIR
    from mojodex_core.db import transaction
    from mojodex_core.users import UserError, create_user, find_user, grant, issue_token, user_for_token

    var_dir = Path(os.environ.get("MOJODEX_VAR_DIR") or VAR_DIR)  # as load_settings reads it
    token_file = var_dir / "demo_token"
    try:
        with transaction(_session_factory()) as session:
            try:
                user = find_user(session, email)
            except UserError:
                user = create_user(session, name="Demo", email=email)
            password = _demo_password(session, user, var_dir / "demo_password")
            token = token_file.read_text().strip() if token_file.exists() else ""
            holder = user_for_token(session, token) if token else None
            # The kept token is reused only if it is this user's: never hand out someone else's.
            if holder is None or holder.user_id != user.user_id:
                token = issue_token(session, user, label="demo")
                var_dir.mkdir(parents=True, exist_ok=True)
                token_file.write_text(token + "\n")
                token_file.chmod(0o600)
            grant(session, user, None)
    except UserError as exc:
        _fail(str(exc))
    click.echo(f"demo user {email}; web app password: {password}; API token:")
    click.echo(token)


def _demo_password(session, user, password_file: Path) -> str:  # noqa: ANN001
    """The demo user's web app password: kept in var/demo_password, made once, set on the user."""
    import secrets

    from mojodex_core.passwords import check_password, set_password

    password = password_file.read_text().strip() if password_file.exists() else ""
    if len(password) < 8:
        password = secrets.token_urlsafe(12)
        password_file.parent.mkdir(parents=True, exist_ok=True)
        password_file.write_text(password + "\n")
        password_file.chmod(0o600)
    if check_password(session, user.email, password) is None:
        set_password(user, password)
    return password


# --- server
@main.command("serve")
@click.option("--worker-connections", default=1000, show_default=True,
              help="Open connections the one worker holds at most: requests, idle keep-alive connections "
                   "and Socket.IO clients.")
def serve(worker_connections: int) -> None:
    """Serve REST and Socket.IO under gunicorn (one gevent worker)."""
    from backend.server import run_gunicorn

    run_gunicorn(_settings(), worker_connections=worker_connections)


main.add_command(order)

if __name__ == "__main__":
    main()
