"""``shadow.json``: where a candidate's writes and replies diverged from production's, conversation by conversation.

Written by ``passhat shadow`` into its folder (beside ``conversations.jsonl``, ``cases/`` and the run
folder ``run/``) and read by ``passhat shadow promote``. Every value in it was redacted before it was
written (unless the shadow ran with ``--no-redact``: ``redaction.enabled``). See docs/shadow.md.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.models.files import FileModel
from passhat.models.finite import STRICT_FLOATS

_DOCS = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)
DivergenceKind = Literal["extra", "missing", "different", "duplicate", "production_duplicate", "reply"]
"""``extra``: the candidate made a write production did not; ``missing``: production made one the candidate
did not; ``different``: the same tool, paired, with other arguments; ``duplicate``: the candidate made the same
write (tool and arguments) twice or more; ``production_duplicate``: production did; ``reply``: the candidate's
final reply names other numbers than production's."""
DIVERGENCE_KINDS: tuple[DivergenceKind, ...] = get_args(DivergenceKind)


class WriteCall(BaseModel):
    """A write that took effect: the tool and its arguments as the tool takes them."""

    model_config = _DOCS
    tool: str
    """The write tool."""
    arguments: dict[str, Any] = Field(default_factory=dict)
    """Its arguments (validated, defaults filled in)."""
    at: int
    """Production: the call's index among the conversation's turns; candidate: the call's step in the trial."""


class WriteDifference(BaseModel):
    """A production write and the candidate's write of the same tool it was paired with, differing in ``fields``."""

    model_config = _DOCS
    tool: str
    """The write tool."""
    fields: list[str]
    """The arguments that differ."""
    production: dict[str, Any]
    """Production's arguments."""
    candidate: dict[str, Any]
    """The candidate's arguments (identifiers it got from the sandbox replaced by production's, see docs)."""


class Duplicate(BaseModel):
    """The same write, tool and arguments, made more than once by one side."""

    model_config = _DOCS
    tool: str
    """The write tool."""
    arguments: dict[str, Any]
    """The repeated arguments."""
    times: int
    """How many times it took effect."""


class ReplyCheck(BaseModel):
    """The numbers (amounts, order numbers, identifiers' digits) of the final replies, normalised by value."""

    model_config = _DOCS
    production: list[str]
    """Numbers in production's final reply."""
    candidate: list[str]
    """Numbers in the candidate's final reply (identifiers mapped to production's first)."""
    missing: list[str]
    """In production's reply, not in the candidate's."""
    extra: list[str]
    """In the candidate's reply, not in production's."""


class TrialDivergence(BaseModel):
    """One trial of the candidate on one conversation, compared with production."""

    model_config = _DOCS
    trial: int
    """The trial's index."""
    outcome: Literal["pass", "fail", "error"]
    """The run's outcome of the trial; ``error`` (infrastructure) trials are not compared."""
    end_reason: str
    """How the trial ended (``completed``, ``agent_error``, ``step_limit``…)."""
    problem: str | None = None
    """What went wrong, in one line: the agent's error, the limit it ran into (``time limit: …``) or the
    infrastructure error."""
    writes: list[WriteCall] = Field(default_factory=list)
    """The candidate's writes that took effect, in order."""
    same: int = 0
    """Writes paired with an identical production write."""
    extra: list[WriteCall] = Field(default_factory=list)
    """Candidate writes production did not make."""
    missing: list[WriteCall] = Field(default_factory=list)
    """Production writes the candidate did not make."""
    different: list[WriteDifference] = Field(default_factory=list)
    """Paired writes of one tool with other arguments."""
    duplicates: list[Duplicate] = Field(default_factory=list)
    """Writes the candidate made more than once."""
    reply: ReplyCheck | None = None
    """The reply comparison (None when production's conversation has no reply to compare with)."""
    reads_served: int = 0
    """Reads answered from production's recording."""
    reads_unrecorded: int = 0
    """Reads that matched no recorded call and ran against the sandbox."""
    unknown_tools: list[str] = Field(default_factory=list)
    """Tools the candidate called that the domain does not have, in order (reported, not a divergence kind: such
    a call changes nothing, what it failed to do shows as ``missing``)."""
    kinds: list[DivergenceKind] = Field(default_factory=list)
    """The kinds of divergence in this trial (production duplicates included); empty: the same as production."""


class ConversationResult(BaseModel):
    """One production conversation: its writes, and how every trial of the candidate compared."""

    model_config = _DOCS
    id: str
    """The conversation's id."""
    case_id: str
    """Its shadow case (``cases/CASE_ID.yaml``, and the run's case id)."""
    source: str
    """Where it was read: ``file:line``, or ``file: trace ID``."""
    production_writes: list[WriteCall]
    """Production's writes that took effect, in order."""
    production_duplicates: list[Duplicate] = Field(default_factory=list)
    """Writes production made more than once."""
    production_reply: str | None = None
    """Production's final reply."""
    trials: list[TrialDivergence]
    """The candidate's trials."""
    measured: int
    """Trials compared (not infrastructure errors)."""
    diverging: int
    """Compared trials with any divergence."""
    kinds: list[DivergenceKind] = Field(default_factory=list)
    """Every kind of divergence in any compared trial."""
    status: Literal["same", "diverges", "unmeasured"]
    """``same``: every compared trial matched production; ``diverges``: one did not; ``unmeasured``: no trial
    could be compared (all infrastructure errors)."""


class Share(BaseModel):
    """Conversations with one kind of divergence among the measured ones, with a Wilson interval."""

    model_config = _DOCS
    kind: str
    """A divergence kind, or ``any``."""
    conversations: int
    """Measured conversations with it (in at least one trial)."""
    of: int
    """Measured conversations."""
    share: float | None
    """``conversations / of`` (None when nothing was measured)."""
    ci_low: float
    """Lower end of the Wilson interval."""
    ci_high: float
    """Upper end."""
    count: int = 0
    """Occurrences over every compared trial: writes (``extra``, ``missing``, ``different``), repeats beyond the
    first (``duplicate``; ``production_duplicate`` once per conversation), or trials (``reply``, ``any``)."""


class TraceFile(BaseModel):
    """One trace file read: which bytes were replayed."""

    model_config = _DOCS
    path: str
    """The file as given."""
    sha256: str
    """sha256 of its bytes as stored (compressed, for a gzip file)."""
    conversations: int
    """Conversations read from it."""


class ShadowReport(FileModel):
    """A shadow run: a candidate replayed on production conversations, and where it diverged."""

    schema_version: Literal["passhat.shadow/1"] = "passhat.shadow/1"
    """The file's kind and version."""
    agent: str
    """The candidate, as given to ``--agent``."""
    domain: str
    """The domain's name."""
    domain_ref: str
    """The domain as given to ``--domain`` (a path made absolute), for ``promote``."""
    fixture: str
    """The default fixture (the sandbox)."""
    trials: int
    """Trials per conversation."""
    seed: int
    """The run seed."""
    traces: list[str]
    """The trace files read."""
    trace_files: list[TraceFile] = Field(default_factory=list)
    """Each trace file with the sha256 of the bytes read, so the run names exactly the traces it replayed."""
    max_seconds: float | None = None
    """Each conversation's time budget for the candidate (None: the case default, 60 s)."""
    redaction: dict[str, Any]
    """Redaction applied to everything read (rules, never values)."""
    run: str
    """The run folder (inside the shadow folder)."""
    confidence: float
    """Level of the intervals."""
    replies_counted: bool = True
    """False with ``--ignore-reply``: replies were compared, but a difference was not a divergence."""
    conversations: list[ConversationResult]
    """Every conversation, in input order."""
    shares: list[Share]
    """``any`` first, then each divergence kind."""
    unmeasured: int
    """Conversations without a compared trial."""
    exit_code: int
    """What ``passhat shadow`` exited with: 0 no divergence, 1 divergence, 4 incomplete (docs/cli.md)."""
