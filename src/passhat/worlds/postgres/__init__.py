"""PostgreSQL worlds: a template database per fixture, a database per trial (docs/worlds.md)."""

from passhat.worlds.postgres.source import Postgres

__all__ = ["Postgres"]
