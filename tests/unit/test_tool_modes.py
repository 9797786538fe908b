"""ReplyGenerator against the scripted OpenAI-compatible server (real openai client): what each
MOJODEX_LLM_TOOL_MODE offers, and the prompt's description of the tag form."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import sessionmaker

from mojodex_core.db.models import Base
from mojodex_core.execution.prompt import render
from mojodex_core.execution.tool_loop import ReplyGenerator, ToolSettings, TurnRequest, prompt_tools
from mojodex_core.llm import LLMProvider
from tests.integration._tools import answer, tag_call
from tests.support.scripted_llm import Reply
from tests.unit._rows import execution_pk

TOOLS = [{"name": "echo", "usage_description": "Echo a text."}]


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict]] = []

    def publish(self, session_id, event_name, payload, *, durable=True):  # noqa: ANN001, ANN201
        self.events.append((event_name, payload))
        return 0

    def publishing(self, session_id):  # noqa: ANN001, ANN201 - unused here
        raise NotImplementedError


@pytest.fixture
def generator_parts(tmp_path, llm_settings):
    import tests.integration._tools  # noqa: F401,PLC0415 - registers the echo tool

    engine = create_engine(f"sqlite:///{tmp_path / 'g.db'}")
    Base.metadata.create_all(engine)
    factory = sessionmaker(engine)
    with factory.begin() as db:
        pk = execution_pk(db, "user-1")
    provider = LLMProvider(llm_settings)
    yield factory, provider, pk
    provider.close()
    engine.dispose()


def generate(parts, mode: str, grammar: str | None = None):  # noqa: ANN001, ANN201
    factory, provider, pk = parts
    events = Recorder()
    generator = ReplyGenerator(factory, events, provider, ToolSettings(mode=mode), coalesce_ms=0,
                               grammar=grammar, max_tokens=None)
    request = TurnRequest(session_id="s", user_task_execution_pk=pk, user_id="user-1", message_pk=1,
                          llm_messages=[{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
                          tools=TOOLS)
    return generator.generate(request, threading.Event()), events


@pytest.mark.parametrize(("mode", "native"), [("auto", True), ("functions", True), ("tags", False)])
def test_modes_offer_native_tools_or_not(generator_parts, llm, mode, native):
    llm.script(Reply(tag_call("echo", {"text": "x"})), Reply(answer("done")))
    outcome, events = generate(generator_parts, mode)
    assert outcome.reply.text == "done"
    assert ("tools" in llm.requests[0]) is native
    assert "".join(p["delta"] for e, p in events.events if e == "mojo_token") == "done"


def test_a_grammar_constrained_model_gets_no_tools(generator_parts, llm):
    llm.script(Reply(answer("plain")))
    outcome, _ = generate(generator_parts, "auto", grammar='root ::= "x"')
    assert "tools" not in llm.requests[0] and outcome.reply.text == "plain"


def test_the_prompt_describes_the_tag_form_only_when_asked():
    context = {
        "username": "Ada", "language": "en", "local_datetime": "now", "inputs": [], "infos_to_extract": [],
        "produced_text": None,
        "task": {"definition_for_system": "d", "output_format_instruction_title": "T",
                 "output_format_instruction_draft": "D", "final_instruction": "F"},
    }
    import tests.integration._tools  # noqa: F401,PLC0415

    tools = prompt_tools({"tools": TOOLS})
    with_tags = render("instruct_task.jinja2", **context, tools=tools, tag_tools=True)
    without = render("instruct_task.jinja2", **context, tools=tools, tag_tools=False)
    bare = render("instruct_task.jinja2", **context)
    assert "- echo: Echo a text." in with_tags and '"required": ["text"]' in with_tags
    assert "<tool_call>" in with_tags and "<tool_call>" not in without and "echo" in without
    assert "TOOLS" not in bare and "<reasoning>" in bare
