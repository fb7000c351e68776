"""The files a run folder holds, as documented, versioned pydantic models (pydantic is all they import).

``manifest.json`` → :class:`Manifest`, ``summary.json`` → :class:`Summary`, ``gate.json`` →
:class:`GateResult`, ``passhat compare --json`` → :class:`Comparison`, ``passhat shadow``'s
``shadow.json`` → :class:`ShadowReport`. Each is written as its model's
dump and read back through it (``Model.load(path)``); a file of another schema version raises
:class:`SchemaVersionError` naming the file and both versions.
"""

from passhat.models.comparison import CaseChange, Comparison, PairedMetric, RunRef, StratumComparison
from passhat.models.files import FileFormatError, FileModel, SchemaVersionError
from passhat.models.gate import GateInfo, GateResult, RuleResult
from passhat.models.manifest import CaseMeta, GateRegistration, Manifest, SuiteInfo
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

__all__ = [
    "CaseChange",
    "CaseMeta",
    "CaseSummary",
    "Comparison",
    "ConversationResult",
    "Distribution",
    "Experience",
    "FileFormatError",
    "FileModel",
    "GateInfo",
    "GateRegistration",
    "GateResult",
    "Interval",
    "Manifest",
    "PairedMetric",
    "RuleResult",
    "RunRef",
    "SchemaVersionError",
    "ShadowReport",
    "StratumComparison",
    "StratumSummary",
    "Summary",
    "SuiteInfo",
    "SuiteSummary",
    "TrialDivergence",
]
