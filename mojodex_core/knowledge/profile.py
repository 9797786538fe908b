"""The user profile: what the user tells the assistant about themselves. Validated, every field optional.

PUT semantics are a partial update: a field sent replaces the stored value, ``null`` or an empty
string clears it, a field left out is kept.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session as DbSession

from mojodex_core.db.models import User, UserProfile
from mojodex_core.languages import unknown_language
from mojodex_core.timestamps import iso_utc
from mojodex_core.timezones import check_time_zone

LANGUAGE_PATTERN = r"^[a-z]{2}(-[A-Za-z]{2})?$"


class ProfileError(ValueError):
    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ProfileUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    name: str | None = Field(None, max_length=255)
    language: str | None = Field(None, pattern=LANGUAGE_PATTERN)
    timezone: str | None = Field(None, max_length=64)
    company_name: str | None = Field(None, max_length=255)
    company_description: str | None = Field(None, max_length=2000)
    job: str | None = Field(None, max_length=255)
    about_me: str | None = Field(None, max_length=2000)

    @field_validator("*", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            return None
        return value

    @field_validator("language")
    @classmethod
    def _known_language(cls, value: str | None) -> str | None:
        problem = unknown_language(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None or value == (info.context or {}).get("stored_timezone"):
            # The stored zone sent back unchanged (a client PUTting the whole profile it read) is kept,
            # even one saved before zones were checked (e.g. "localtime").
            return value
        return check_time_zone(value)


PROFILE_FIELDS: tuple[str, ...] = tuple(ProfileUpdate.model_fields)


def get_profile(db: DbSession, user_id: str) -> UserProfile | None:
    return db.get(UserProfile, user_id)


def profile_view(profile: UserProfile | None) -> dict[str, Any]:
    view: dict[str, Any] = {name: getattr(profile, name) if profile else None for name in PROFILE_FIELDS}
    view["updated_at"] = iso_utc(profile.updated_at) if profile else None
    return view


def parse_update(body: Any, stored_timezone: str | None = None) -> dict[str, Any]:
    """The fields to write, validated; raises ProfileError naming the first bad field.

    ``timezone`` equal to ``stored_timezone`` (the profile's) is accepted as it is.
    """
    if not isinstance(body, dict):
        raise ProfileError("body", "must be a JSON object")
    try:
        update = ProfileUpdate.model_validate(body, context={"stored_timezone": stored_timezone})
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "body"
        message = "unknown field" if error["type"] == "extra_forbidden" else error["msg"]
        if message.startswith("Value error, "):
            message = message[len("Value error, "):]
        raise ProfileError(where, message) from None
    return {name: getattr(update, name) for name in update.model_fields_set}


def update_profile(db: DbSession, user_id: str, body: Any) -> UserProfile:
    """Validates then writes the profile in the caller's transaction (nothing written on a bad field)."""
    profile = db.get(UserProfile, user_id)
    values = parse_update(body, profile.timezone if profile is not None else None)
    if profile is None:
        try:
            with db.begin_nested():
                db.add(UserProfile(user_id=user_id))
        except IntegrityError:  # created meanwhile by another request of the same user: update that one
            pass
        profile = db.get(UserProfile, user_id)
    for name, value in values.items():
        setattr(profile, name, value)
    if values.get("language"):
        # One language per user: the account's, which new sessions and task names follow.
        user = db.get(User, user_id)
        if user is not None:
            user.language_code = values["language"]
    db.flush()
    return profile
