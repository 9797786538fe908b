"""The Redis broker transport, with one fix: a failed acknowledgement still frees its slot.

kombu's Redis QoS removes an acknowledged message from its unacked index in Redis and only
then forgets it locally. When Redis is down at that moment (killed, restarting) the removal
raises, the local entry stays, and the worker's prefetch window (``worker_prefetch_multiplier``
x concurrency) stays full: once every pool thread finished a task during the outage the worker
never polls the broker again, so it never notices the lost connection and never consumes
again, though Redis is back. Here the local entry is always forgotten. Nothing is lost: a
restarted Redis has no index left, and an index left in a Redis that only was unreachable is
redelivered after the visibility timeout (drains are idempotent).

The channel also reuses its synchronous Redis client (see ``Channel``).
"""

from __future__ import annotations

from kombu.transport import redis as kombu_redis
from kombu.transport.virtual import QoS as VirtualQoS


class QoS(kombu_redis.QoS):
    def ack(self, delivery_tag) -> None:  # noqa: ANN001
        try:
            self._remove_from_indices(delivery_tag).execute()
        finally:
            VirtualQoS.ack(self, delivery_tag)

    def reject(self, delivery_tag, requeue=False) -> None:  # noqa: ANN001, FBT002
        try:
            if requeue:
                self.restore_by_tag(delivery_tag, leftmost=True)
            else:
                self._remove_from_indices(delivery_tag).execute()
        finally:
            VirtualQoS.ack(self, delivery_tag)


class Channel(kombu_redis.Channel):
    """Also reuses one client object per connection pool for the synchronous commands (the QoS
    pipelines that index and acknowledge every task): kombu built a new ``redis.Redis`` at each,
    whose constructor alone was ~1.5% of a worker's CPU per turn. A client is only a handle on
    the pool (thread-safe); a pool replaced after a disconnection gets a new one."""

    QoS = QoS
    _sync_client: tuple[object, object] | None = None

    def _create_client(self, asynchronous=False):  # noqa: ANN001, ANN202, FBT002
        if asynchronous:
            return super()._create_client(asynchronous=True)
        pool = self.pool
        cached = self._sync_client
        if cached is None or cached[0] is not pool:
            cached = self._sync_client = (pool, super()._create_client())
        return cached[1]


class Transport(kombu_redis.Transport):
    Channel = Channel
