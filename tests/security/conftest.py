"""The security tests reuse the foundation's CLI fixture (`mojodex` on the suite's database)."""

from tests.foundation.conftest import cli  # noqa: F401
