"""Distributed mode (MOJODEX_RUNNER=celery): Celery workers, Redis streams and message queue."""
