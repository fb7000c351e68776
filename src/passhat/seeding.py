"""Stable seeds.

A trial's seed is derived from the run seed, the case id and the trial index with SHA-256, never
Python's ``hash()`` (salted per process), so a trial can be reproduced on any machine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable


def derive_seed(*parts: object) -> int:
    """A 63-bit seed that depends only on ``parts`` (their ``str`` forms, joined unambiguously)."""
    text = "\x1f".join(str(p) for p in parts)
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def seed_sequence(*parts: object) -> Callable[[object], int]:
    """``derive_seed(*parts, n)`` as a function of ``n``, hashing the common prefix once (span ids: a dozen
    per trial, each the same prefix)."""
    prefix = hashlib.sha256(("\x1f".join(str(p) for p in parts) + "\x1f").encode("utf-8"))

    def nth(last: object) -> int:
        h = prefix.copy()
        h.update(str(last).encode("utf-8"))
        return int.from_bytes(h.digest()[:8], "big") >> 1

    return nth


def trial_seed(run_seed: int, case_id: str, trial: int) -> int:
    """The seed of one trial: the same run seed, case and index always give the same seed."""
    return derive_seed("trial", run_seed, case_id, trial)
