"""passhat as a library: :func:`evaluate` (and :func:`evaluate_async`) run a suite and return a :class:`Run`.

See docs/python-api.md. ``passhat run`` is a thin layer over :func:`evaluate`.
"""

from passhat.api.evaluation import AgentLike, PasshatWarning, Progress, evaluate, evaluate_async
from passhat.api.options import RunOptions
from passhat.api.run import CaseFailure, Run

__all__ = ["AgentLike", "CaseFailure", "PasshatWarning", "Progress", "Run", "RunOptions", "evaluate", "evaluate_async"]
