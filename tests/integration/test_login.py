"""Email + password sign-in (POST /login), sign-out, and the limit on failed attempts."""

from __future__ import annotations

import uuid

import pytest
import requests
from click.testing import CliRunner

from backend.cli import main as cli
from mojodex_core.passwords import check_password, set_password
from mojodex_core.users import UserError, create_user, find_user


def _user_with_password(live, password: str = "correct horse 42") -> str:
    email = f"p{uuid.uuid4().hex[:10]}@example.com"
    with live.db() as db:
        user = create_user(db, name="Pat", email=email)
        set_password(user, password)
    return email


def test_login_gives_a_token_that_works_and_logout_revokes_it(live):
    email = _user_with_password(live)
    response = requests.post(live.base_url + "/login", json={"email": email.upper(), "password": "correct horse 42"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["user"]["email"] == email and body["token"]
    auth = {"Authorization": f"Bearer {body['token']}"}
    assert requests.get(live.base_url + "/user", headers=auth).json()["name"] == "Pat"
    assert requests.post(live.base_url + "/logout", headers=auth).json() == {"revoked": True}
    assert requests.get(live.base_url + "/user", headers=auth).status_code == 401


def test_password_is_stored_as_an_argon2_hash(live):
    email = _user_with_password(live, "s3cret-pass")
    with live.db() as db:
        stored = find_user(db, email).password_hash
    assert stored.startswith("$argon2id$") and "s3cret-pass" not in stored


@pytest.mark.parametrize("body", [
    {"email": "nobody@example.com", "password": "whatever1"},
    {"email": "{email}", "password": "wrong password"},
])
def test_wrong_email_or_password_is_one_401(live, body):
    email = _user_with_password(live)
    body = {k: v.format(email=email) for k, v in body.items()}
    response = requests.post(live.base_url + "/login", json=body)
    assert response.status_code == 401
    assert response.json() == {"error": "wrong email or password"}


def test_a_user_without_password_cannot_sign_in_with_an_empty_one(live):
    client = live.new_user()
    with live.db() as db:
        from mojodex_core.db.models import User

        email = db.get(User, client.user_id).email
    assert requests.post(live.base_url + "/login", json={"email": email, "password": ""}).status_code == 401


def test_missing_fields_are_400(live):
    response = requests.post(live.base_url + "/login", json={"email": "a@b.co"})
    assert response.status_code == 400 and response.json()["field"] == "password"


def test_failed_logins_are_rate_limited_per_email(live):
    email = _user_with_password(live)
    codes = [requests.post(live.base_url + "/login", json={"email": email, "password": "nope-nope"}).status_code
             for _ in range(6)]
    assert codes == [401] * 5 + [429]
    # Even the right password waits until the window moves: a guesser learns nothing.
    blocked = requests.post(live.base_url + "/login", json={"email": email, "password": "correct horse 42"})
    assert blocked.status_code == 429 and blocked.json()["retry_after"] >= 1
    assert blocked.headers["Retry-After"] == str(blocked.json()["retry_after"])  # as every 429 has
    assert "try again" in blocked.json()["error"]


def test_short_password_is_refused(live):
    with live.db() as db:
        user = create_user(db, name="Short", email=f"s{uuid.uuid4().hex[:8]}@example.com")
        with pytest.raises(UserError, match="at least 8"):
            set_password(user, "short")


def test_cli_create_with_password_and_demo_password(live, database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("MOJODEX_VAR_DIR", str(tmp_path))
    email = f"c{uuid.uuid4().hex[:8]}@example.com"
    result = CliRunner().invoke(cli, ["users", "create", "--name", "Cli", "--email", email,
                                      "--password", "cli-password-1"])
    assert result.exit_code == 0, result.output
    with live.db() as db:
        assert check_password(db, email, "cli-password-1") is not None
    bad = CliRunner().invoke(cli, ["users", "create", "--name", "X", "--email", "x" + email, "--password", "short"])
    assert bad.exit_code == 2 and "at least 8" in bad.output
    demo_email = f"d{uuid.uuid4().hex[:8]}@example.com"
    first = CliRunner().invoke(cli, ["users", "demo", "--email", demo_email])
    assert first.exit_code == 0, first.output
    password = (tmp_path / "demo_password").read_text().strip()
    assert f"web app password: {password}" in first.output
    again = CliRunner().invoke(cli, ["users", "demo", "--email", demo_email])
    assert f"web app password: {password}" in again.output  # kept across runs
    with live.db() as db:
        assert check_password(db, demo_email, password) is not None


def test_cli_set_password_signs_the_user_out_everywhere(live, database_url, tmp_path, monkeypatch):
    """A tester changed a password with the CLI: the tokens signed in with the old one still worked."""
    monkeypatch.setenv("DATABASE_URL", database_url)
    monkeypatch.setenv("MOJODEX_VAR_DIR", str(tmp_path))
    email = _user_with_password(live)
    tokens = [requests.post(live.base_url + "/login", json={"email": email, "password": "correct horse 42"})
              .json()["token"] for _ in range(2)]
    result = CliRunner().invoke(cli, ["users", "set-password", "--email", email, "--password", "new-password-2"])
    assert result.exit_code == 0 and "2 token(s) revoked" in result.output, result.output
    for token in tokens:
        assert requests.get(live.base_url + "/user", headers={"Authorization": f"Bearer {token}"}).status_code == 401
    kept = requests.post(live.base_url + "/login", json={"email": email, "password": "new-password-2"}).json()["token"]
    result = CliRunner().invoke(cli, ["users", "set-password", "--email", email, "--password", "new-password-3",
                                      "--keep-sessions"])
    assert result.exit_code == 0 and "revoked" not in result.output, result.output
    assert requests.get(live.base_url + "/user", headers={"Authorization": f"Bearer {kept}"}).status_code == 200


def test_root_serves_the_build_or_says_how_to_get_it(live, monkeypatch, tmp_path):
    import backend.app as app_module

    page = requests.get(live.base_url + "/")
    assert page.status_code == 200 and "text/html" in page.headers["Content-Type"]
    monkeypatch.setattr(app_module, "WEBAPP_BUILD", tmp_path / "no-build")
    missing = requests.get(live.base_url + "/")
    assert missing.status_code == 200 and "make webapp" in missing.text and "Node.js" in missing.text
