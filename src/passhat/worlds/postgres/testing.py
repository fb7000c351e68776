"""For test suites (passhat's and yours): the PostgreSQL server tests use, or a loud reason why not.

Tests of PostgreSQL worlds never skip silently. ``require_postgres()`` returns this process's server
(``PASSHAT_PG_URL``, else a throwaway cluster, as a run would choose); when there is none it fails the
test saying what to install — unless ``PASSHAT_TEST_POSTGRES=skip`` is set, which skips with that reason
instead (for machines that cannot have PostgreSQL, chosen on purpose).
"""

from __future__ import annotations

import os
from typing import Any

OPT_OUT = "PASSHAT_TEST_POSTGRES"


def require_postgres() -> Any:
    """The server (a :class:`~passhat.worlds.postgres.server.PgServer`), or a failed/skipped test."""
    import pytest

    from passhat.worlds.postgres import server
    from passhat.worlds.postgres.cluster import PostgresUnavailable

    try:
        return server.current()
    except PostgresUnavailable as exc:
        if os.environ.get(OPT_OUT) == "skip":
            pytest.skip(f"PostgreSQL tests skipped ({OPT_OUT}=skip): {exc}")
        pytest.fail(f"PostgreSQL is needed for this test and is not available: {exc}. "
                    f"Set {OPT_OUT}=skip to skip these tests on purpose.", pytrace=False)
