"""The Redis event log allocates a message's seq before its row is inserted: the row stores the
seq of its user_message_reception event (tests/unit/test_intake_seq.py, on Redis). Needs no
cluster: the suite's Postgres and TEST_REDIS_URL (a database of the machine's Redis)."""

from __future__ import annotations

import pytest
import redis

from background.distributed.events import RedisSessionEventLog
from tests.distributed.conftest import DATABASE_URL, REDIS_URL
from tests.unit.test_intake_seq import Sent, check_message_seq_is_its_event_seq, factory  # noqa: F401

pytestmark = pytest.mark.skipif(not (REDIS_URL and DATABASE_URL),
                                reason="needs TEST_REDIS_URL and TEST_DATABASE_URL")


def test_message_seq_is_its_event_seq_on_redis(factory):  # noqa: F811
    client = redis.Redis.from_url(REDIS_URL)
    try:
        sent = Sent()
        check_message_seq_is_its_event_seq(factory, RedisSessionEventLog(factory, client, sent), sent)
    finally:
        client.close()
