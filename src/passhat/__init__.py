"""passhat: does your agent do the job right every time, and leave the world exactly as it should?

``passhat.evaluate(suite, agent, trials=...)`` runs a suite and returns a ``passhat.Run``; the models of
the files a run writes are in ``passhat.models``. Names are imported on first use, so ``import passhat``
(and the CLI's start-up) stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_LAZY = {
    "evaluate": "passhat.api", "evaluate_async": "passhat.api", "Run": "passhat.api", "Progress": "passhat.api",
    "CaseFailure": "passhat.api", "PasshatWarning": "passhat.api", "RunOptions": "passhat.api",
    "Manifest": "passhat.models", "Summary": "passhat.models", "SuiteSummary": "passhat.models",
    "CaseSummary": "passhat.models", "Interval": "passhat.models", "Comparison": "passhat.models",
    "GateResult": "passhat.models", "SchemaVersionError": "passhat.models",
    "PasshatError": "passhat.errors",
}

if TYPE_CHECKING:
    from passhat.api import CaseFailure, PasshatWarning, Progress, Run, RunOptions, evaluate, evaluate_async
    from passhat.errors import PasshatError
    from passhat.models import (
        CaseSummary,
        Comparison,
        GateResult,
        Interval,
        Manifest,
        SchemaVersionError,
        SuiteSummary,
        Summary,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'passhat' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute lookup
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "CaseFailure", "CaseSummary", "Comparison", "GateResult", "Interval", "Manifest", "PasshatError", "PasshatWarning",
    "Progress", "Run", "RunOptions", "SchemaVersionError", "Summary", "SuiteSummary", "__version__", "evaluate", "evaluate_async",
]
