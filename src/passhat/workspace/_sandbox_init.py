"""Moved to :mod:`passhat.sandbox._init` (one confinement machine for commands and agents: docs/design/021)."""

from passhat.sandbox._init import *  # noqa: F403
