"""The security tests reuse the foundation's CLI fixture (`mojodex` on the suite's database)."""

import dataclasses

import pytest

from tests.foundation.conftest import cli  # noqa: F401
from tests.support.live import live_settings, serving


@pytest.fixture(scope="module")
def slow_check_server(database_url, scripted_llm, live_server):  # noqa: ANN001, ANN201
    # The periodic check far away: what refuses a start_session is the check it makes itself.
    settings = dataclasses.replace(live_settings(database_url, scripted_llm.base_url), socket_auth_recheck_s=300)
    with serving(settings) as live:
        yield live
