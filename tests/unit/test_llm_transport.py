"""The openai client's transport under gevent: idle connections are checked with the OS's poll.

The gevent cases run in a new interpreter patched as gunicorn's gevent worker patches itself,
against the scripted LLM served by this process.
"""

from __future__ import annotations

import json
import os
import select
import socket

import pytest

from mojodex_core.llm.transport import idle_check, llm_http_client
from tests.support.gevent_child import run_patched
from tests.support.scripted_llm import Reply, ScriptedLLMServer

CLIENT = """
    import json, select, sys
    import gevent, openai
    from gevent import monkey
    from mojodex_core.llm.transport import llm_http_client
    checks = []
    cooperative_poll = select.poll
    def counted_poll(*args):
        checks.append(1)
        return cooperative_poll(*args)
    select.poll = counted_poll  # what httpcore's own check calls
    os_checks = []
    os_poll = monkey.get_original("select", "poll")
    def counted_os_poll():
        os_checks.append(1)
        return os_poll()
    get_original = monkey.get_original
    def counted_get_original(module, name):  # what llm_http_client asks for
        return counted_os_poll if (module, name) == ("select", "poll") else get_original(module, name)
    monkey.get_original = counted_get_original
    http_client = llm_http_client() if sys.argv[2] == "ours" else None
    client = openai.OpenAI(base_url=sys.argv[1], api_key="k", max_retries=0, http_client=http_client)
    def ask():
        reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        return reply.choices[0].message.content
    texts = [g.value for g in gevent.joinall([gevent.spawn(ask) for _ in range(5)])]  # 5 connections
    del checks[:], os_checks[:]
    texts += [ask(), ask()]  # each on a pooled connection, the other idle ones checked
    print(json.dumps({"texts": texts, "checks": len(checks), "os_checks": len(os_checks)}))
"""


@pytest.fixture
def llm():
    server = ScriptedLLMServer().start()
    server.responder = lambda _body: Reply("hello there", delay_s=0.2)
    yield server
    server.stop()


def _client_run(llm, which: str) -> dict:
    run = run_patched(CLIENT, llm.base_url, which)
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_under_gevent_idle_connections_are_not_checked_through_gevents_poll(llm):
    # was: every request checked each idle pooled connection through gevent's poll, 14 µs each
    # Each of the two requests on a pooled connection checks at least the connection it reuses: how many more
    # is the pool's business (httpcore2 2.17.0 checks 2, the versions installed before 4 and more); which
    # poll checks them is ours.
    default = _client_run(llm, "default")
    assert default["checks"] >= 2, default  # the openai client's own pool: gevent's poll
    ours = _client_run(llm, "ours")
    assert ours["texts"] == ["hello there"] * 7
    assert ours["checks"] == 0, ours
    assert ours["os_checks"] >= 2, ours  # the idle connections are still checked, with the OS's poll


def test_the_check_tells_an_open_idle_connection_from_a_closed_one():
    readable = idle_check(select.poll)
    ours, theirs = socket.socketpair()
    try:
        assert readable(ours) is False
        theirs.sendall(b"x")
        assert readable(ours) is True  # data waiting: not a connection to reuse
        ours.recv(1)
        theirs.close()
        assert readable(ours) is True  # the peer closed it: the next read gives b""
    finally:
        ours.close()
    assert readable(None) is True
    assert readable(ours) is True  # closed here: fileno() is -1


def test_without_gevent_the_openai_client_keeps_its_own_http_client():
    assert llm_http_client() is None


@pytest.mark.parametrize("variable", ["HTTPS_PROXY", "https_proxy", "ALL_PROXY", "HTTP_PROXY"])
def test_under_gevent_a_configured_proxy_keeps_the_openai_default_client(variable):
    # was: our transport made httpx skip the proxy variables, so a host that reaches the LLM only
    # through a proxy connected directly (found in review)
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    script = """
        import openai
        from mojodex_core.llm.transport import llm_http_client
        client = llm_http_client()
        print("default" if client is None else "ours")
        proxied = openai.OpenAI(base_url="https://llm.example/v1", api_key="k", http_client=client)
        print(bool(proxied._client._mounts))  # the proxy transports httpx built from the environment
    """
    proxied = run_patched(script, env={**env, variable: "http://proxy.example:3128"})
    assert proxied.stdout.split() == ["default", "True"]
    assert run_patched(script, env=env).stdout.split() == ["ours", "False"]


def test_the_transport_loads_the_certificates_once():
    # was: httpx's own __init__ built an SSL context (~30 ms, certifi's bundle) for the pool this
    # transport replaces, on the first LLM call of the process
    from unittest.mock import patch

    import httpcore2

    from mojodex_core.llm.transport import IdleCheckTransport

    with patch.object(httpcore2, "default_ssl_context", wraps=httpcore2.default_ssl_context) as loads:
        IdleCheckTransport(idle_check(select.poll))
    assert loads.call_count == 1
