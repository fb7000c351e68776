"""The built-in assertion kinds, read from their families: what a case file may name besides a grader.

Each family module exports its kinds as ``KINDS``; everything that lists kinds (the registry, the
validation union, shorthand fields, the kinds that need a workspace, the generated reference) is derived
from the classes here, so a kind added to a family needs no edit anywhere else. A new family is one
more entry in :data:`FAMILIES`.
"""

from __future__ import annotations

from passhat.cases.assertions import commands, expected, files, reply, rows, scope
from passhat.cases.assertions.base import BuiltinAssertion

FAMILIES = (rows, scope, expected, reply, commands, files)
"""The families in the order their kinds are documented (and listed in error messages)."""
BUILTIN_ASSERTIONS: tuple[type[BuiltinAssertion], ...] = tuple(kind for family in FAMILIES for kind in family.KINDS)
ASSERTION_KINDS: dict[str, type[BuiltinAssertion]] = {kind.kind_name(): kind for kind in BUILTIN_ASSERTIONS}
"""Each built-in kind by its key in a case file."""
SHORTHAND_FIELD: dict[str, str] = {name: kind.shorthand for name, kind in ASSERTION_KINDS.items() if kind.shorthand}
"""The field a scalar value fills, by kind: ``reply_contains: "38.5"`` is ``reply_contains: {text: "38.5"}``."""
WORKSPACE_ASSERTIONS = frozenset(name for name, kind in ASSERTION_KINDS.items() if kind.needs_workspace)
"""Kinds that need a workspace (``Domain(workspace=...)``): a case of another domain is refused at load."""
