"""The broker transport's QoS (background/distributed/broker.py): an acknowledgement that fails
because Redis is down still frees the worker's prefetch slot, so the worker polls the broker
again (and reconnects) once Redis is back."""

from __future__ import annotations

import pytest
import redis
from kombu.transport import redis as kombu_redis

from background.distributed.broker import QoS


class _DownPipeline:
    def execute(self) -> None:
        raise redis.ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


class _Channel:
    do_restore = False  # nothing to hand back to a broker at exit


def _full_window(cls: type) -> kombu_redis.QoS:
    qos = cls(channel=_Channel(), prefetch_count=2)
    qos._remove_from_indices = lambda _tag, pipe=None: _DownPipeline()  # Redis is down
    for tag in ("t1", "t2"):
        qos._delivered[tag] = object()
    assert not qos.can_consume()
    return qos


@pytest.mark.parametrize("settle", ["ack", "reject"])
def test_a_failed_settlement_still_frees_its_slot(settle: str) -> None:
    qos = _full_window(QoS)
    for tag in ("t1", "t2"):
        with pytest.raises(redis.ConnectionError):  # still reported (Celery logs "Couldn't ack")
            getattr(qos, settle)(tag)
    assert qos.can_consume()


def test_kombus_own_qos_leaks_the_slot_which_is_why_broker_py_exists() -> None:
    qos = _full_window(kombu_redis.QoS)
    for tag in ("t1", "t2"):
        with pytest.raises(redis.ConnectionError):
            qos.ack(tag)
    assert not qos.can_consume()  # if kombu fixes this, broker.py can go


def test_the_channel_reuses_its_sync_client_until_its_pool_is_replaced() -> None:
    import os

    from kombu import Connection

    url = os.environ.get("TEST_REDIS_URL")
    if not url:
        pytest.skip("needs TEST_REDIS_URL")
    with Connection(url, transport="background.distributed.broker:Transport") as connection:
        channel = connection.default_channel
        first = channel._create_client()
        assert channel._create_client() is first, "one client per pool, not one per acknowledgement"
        assert channel._create_client(asynchronous=True) is not first
        channel._disconnect_pools()  # what kombu does after a lost connection
        second = channel._create_client()
        assert second is not first and second.connection_pool is channel.pool
        assert second.ping()
