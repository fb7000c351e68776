"""The files a run folder holds, as documented, versioned pydantic models (pydantic is all they import).

``manifest.json`` → :class:`Manifest`, ``summary.json`` → :class:`Summary`, ``gate.json`` →
:class:`GateResult`, ``passhat compare --json`` → :class:`Comparison`, ``passhat shadow``'s
``shadow.json`` → :class:`ShadowReport`. Each is written as its model's
dump and read back through it (``Model.load(path)``); a file of another schema version raises
:class:`SchemaVersionError` naming the file and both versions.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from passhat.models.comparison import (
        CaseChange,
        Changes,
        ComparedCases,
        Comparison,
        ExcludedCase,
        PairedMetric,
        RunRef,
        StratumComparison,
    )
    from passhat.models.files import FileFormatError, FileModel, SchemaVersionError
    from passhat.models.gate import BaselineInfo, GateInfo, GateOverride, GateResult, RuleResult
    from passhat.models.manifest import (
        CaseMeta,
        FrozenCheck,
        GateRegistration,
        Manifest,
        ModelInfo,
        OutcomeChange,
        RegradeInfo,
        RoleModels,
        Selection,
        SuiteInfo,
    )
    from passhat.models.shadow import ConversationResult, ShadowReport, TrialDivergence
    from passhat.models.summary import (
        CaseSummary,
        Distribution,
        Experience,
        Interval,
        StratumSummary,
        SuiteSummary,
        Summary,
    )

_HOME = {
    **dict.fromkeys(("CaseChange", "Changes", "Comparison", "ComparedCases", "ExcludedCase", "PairedMetric", "RunRef",
                     "StratumComparison"), "comparison"),
    **dict.fromkeys(("FileFormatError", "FileModel", "SchemaVersionError"), "files"),
    **dict.fromkeys(("BaselineInfo", "GateInfo", "GateOverride", "GateResult", "RuleResult"), "gate"),
    **dict.fromkeys(("CaseMeta", "FrozenCheck", "GateRegistration", "Manifest", "ModelInfo", "OutcomeChange",
                     "RegradeInfo", "RoleModels", "Selection", "SuiteInfo"), "manifest"),
    **dict.fromkeys(("ConversationResult", "ShadowReport", "TrialDivergence"), "shadow"),
    **dict.fromkeys(("CaseSummary", "Distribution", "Experience", "Interval", "StratumSummary", "SuiteSummary",
                     "Summary"), "summary"),
}
"""Each name's module. Imported when first asked for (PEP 562): a run builds its manifest, summary and
records, and need not build the comparison, gate and shadow models' schemas (tens of ms at every start)."""


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'passhat.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"passhat.models.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "BaselineInfo",
    "CaseChange",
    "CaseMeta",
    "CaseSummary",
    "Changes",
    "ComparedCases",
    "Comparison",
    "ConversationResult",
    "Distribution",
    "ExcludedCase",
    "Experience",
    "FileFormatError",
    "FileModel",
    "FrozenCheck",
    "GateInfo",
    "GateOverride",
    "GateRegistration",
    "GateResult",
    "Interval",
    "Manifest",
    "ModelInfo",
    "OutcomeChange",
    "PairedMetric",
    "RegradeInfo",
    "RoleModels",
    "RuleResult",
    "RunRef",
    "SchemaVersionError",
    "Selection",
    "ShadowReport",
    "StratumComparison",
    "StratumSummary",
    "SuiteInfo",
    "SuiteSummary",
    "Summary",
    "TrialDivergence",
]
