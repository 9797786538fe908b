from __future__ import annotations

from pathlib import Path

import pytest

from mojodex_core.order.conversation import Conversation, TurnInput, TurnOutcome, converse, start_conversation
from mojodex_core.order.menu import Menu, load_menu

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def florist_menu() -> Menu:
    return load_menu(FIXTURES / "florist.json")


class Session:
    """Drives one conversation turn by turn and keeps every outcome."""

    def __init__(self, menu: Menu, language: str = "en", llm=None) -> None:
        self.menu = menu
        self.llm = llm
        self.conv, self.greeting = start_conversation(menu, language)
        self.outcomes: list[TurnOutcome] = []

    def lines(self) -> list[tuple[str, dict]]:
        """The order's live lines: (item type, a copy of its fields)."""
        return [(it.item_type, dict(it.fields)) for _, it in self.conv.order.items.active()]

    def say(self, text: str) -> TurnOutcome:
        return self._turn(TurnInput(text=text))

    def event(self, name: str, **item) -> TurnOutcome:
        return self._turn(TurnInput(event=name, item=item or None))

    def _turn(self, turn: TurnInput) -> TurnOutcome:
        before = self.conv.model_dump()
        out = converse(self.conv, turn, self.menu, llm=self.llm)
        assert self.conv.model_dump() == before  # the input conversation is never mutated
        self.outcomes.append(out)
        self.conv = out.conversation
        return out

    def run(self, *texts: str) -> TurnOutcome:
        out = None
        for text in texts:
            out = self.say(text)
        assert out is not None
        return out

    @property
    def state(self) -> str:
        return self.conv.state

    @property
    def conversation(self) -> Conversation:
        return self.conv


@pytest.fixture
def session():
    def make(menu: Menu, language: str = "en", llm=None) -> Session:
        return Session(menu, language, llm)

    return make
