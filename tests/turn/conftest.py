from __future__ import annotations

from collections.abc import Iterator

import pytest

from mojodex_core.db import make_engine, make_session_factory
from tests.turn._harness import Turns


@pytest.fixture(scope="module")
def engine(database_url: str) -> Iterator:
    engine = make_engine(database_url)
    yield engine
    engine.dispose()


@pytest.fixture
def make_turns(engine) -> Iterator:  # noqa: ANN001
    made: list[Turns] = []

    def make(**options) -> Turns:  # noqa: ANN003
        made.append(Turns(make_session_factory(engine), **options))
        return made[-1]

    yield make
    for turns in made:
        turns.close()


@pytest.fixture
def turns(make_turns) -> Turns:  # noqa: ANN001
    return make_turns()
