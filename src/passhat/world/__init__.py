"""The live state of one trial: a SQLite database restored from an in-memory fixture image."""

from passhat.world.clock import Clock, IdGenerator
from passhat.world.diff import Diff, RowChange
from passhat.world.image import FixtureImage, TableInfo
from passhat.world.query import QUERY_STEP_BUDGET, QueryBudgetExceeded, bounded_query
from passhat.world.world import World

__all__ = [
    "QUERY_STEP_BUDGET", "Clock", "Diff", "FixtureImage", "IdGenerator", "QueryBudgetExceeded", "RowChange", "TableInfo",
    "World", "bounded_query",
]
