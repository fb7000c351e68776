"""Fixtures of the world tests: the PostgreSQL server (never skipped silently: worlds/postgres/testing.py)."""

from __future__ import annotations

from typing import Any

import pytest

from passhat.worlds.postgres.testing import require_postgres


@pytest.fixture(scope="session")
def pg() -> Any:
    """This test process's PostgreSQL server (a throwaway cluster unless PASSHAT_PG_URL names one)."""
    return require_postgres()
