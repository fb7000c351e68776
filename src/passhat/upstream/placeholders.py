"""The per-trial values an upstream's command, environment and headers are filled with.

The world's own values (where its workspace copy, SQLite file or PostgreSQL database is) come from one
function, :func:`world_values`, so the way a world kind tells a server how to reach it is read in one
place. The trial adds who the agent acts for and the seed; the run adds this interpreter.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Mapping
from typing import Any

from passhat.errors import DomainError

PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
WORLD_KEYS = ("workspace", "sqlite_path", "database_url")
"""Placeholders a world may fill, depending on its kind (docs/design/020)."""
TRIAL_KEYS = ("identity", "seed", "now", "python", "port")


def world_values(world: Any) -> dict[str, str]:
    """How this trial's world is reached, by placeholder name: the world seam's ``World.reach()``
    (docs/design/019: ``workspace``, ``sqlite_path``, ``database_url``, as its kinds offer)."""
    return {str(k): str(v) for k, v in world.reach().items()}


def trial_values(world: Any, *, identity: str | None, seed: int) -> dict[str, str]:
    """Every placeholder of one trial: the world's, the identity, the seed, the clock's start, ``{python}``."""
    values = {"identity": identity or "", "seed": str(seed), "python": sys.executable}
    clock = getattr(world, "clock", None)
    if clock is not None:
        values["now"] = clock.iso()
    values.update(world_values(world))
    return values


def fill(template: str, values: Mapping[str, str], where: str) -> str:
    """``template`` with each ``{name}`` replaced (``{{`` and ``}}`` are literal braces). A name the trial has
    no value for is bad input naming it and what this world offers."""

    def one(m: re.Match[str]) -> str:
        if m.group(0) in ("{{", "}}"):
            return m.group(0)[0]
        name = m.group(1)
        if name not in values:
            known = ", ".join("{" + k + "}" for k in sorted(values))
            hint = (f" (this world has no {name}: its kind does not offer it)" if name in WORLD_KEYS else "")
            raise DomainError(f"{where}: unknown placeholder {{{name}}}{hint}; this trial offers {known}")
        return values[name]

    return PLACEHOLDER.sub(one, template)


def names_in(template: str) -> set[str]:
    """The placeholder names a template uses."""
    return {m.group(1) for m in PLACEHOLDER.finditer(template) if m.group(1)}
