"""``manifest.json``: what a run measured — suite and case hashes, agent, trials, seed, versions, gate.

Written by the runner before the first trial (so a registered gate precedes every result) and again
when the run completes; a resumed run keeps its start time and adds to ``resumed_at``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.errors import RunError
from passhat.inputs import special_kind
from passhat.models.files import FileModel
from passhat.models.finite import STRICT_FLOATS

_DOCS = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)


class CaseMeta(BaseModel):
    """What the manifest records about a case besides its hash: how reports and gates group it."""

    model_config = _DOCS
    tags: dict[str, str] = Field(default_factory=dict)
    """The case's tags (``risk: high``); strata and gate selections read them."""
    group: str | None = None
    """Family of cases sharing a template: resampled together, counted as one unit."""
    split: str | None = None
    """``dev``, ``holdout`` or ``regression``."""
    domain: str | None = None
    """The domain the case runs against (older manifests do not say)."""
    fixture: str | None = None
    """The fixture (initial state) of the world."""
    identity: str | None = None
    """Who the agent acted for (the case's ``user.identity``), so a trial exported as a trace says whose
    conversation it was (older manifests do not say)."""
    faults: list[str] = Field(default_factory=list)
    """The case's planned faults, each as a call's ``fault`` names it when it acts (``timeout on get_note call
    1``), so that a summary recomputed from the records alone counts the trials that never reached one
    (``CaseSummary.faults_not_reached``). Left out when the case plans none; older manifests do not say, and
    their summaries count none."""


class SuiteInfo(BaseModel):
    """The suite as run: two runs measured the same thing only when ``hash`` is equal."""

    model_config = _DOCS
    name: str
    """The suite's name (a built-in name, or its folder's)."""
    hash: str
    """Content hash of the cases and of the domain code, fixtures and policy they run against."""
    cases: dict[str, str]
    """Case id → content hash of the case, in run order."""
    folder: str | None = None
    """Where the case files were read from (absolute since this field's siblings were added; older
    manifests hold the path as given, relative to the folder the run was started in)."""
    folder_from_run: str | None = None
    """The suite folder relative to the run folder: found again when both were moved together."""
    folder_in_project: str | None = None
    """The suite folder relative to its project root (the nearest folder above it with ``.git`` or
    ``pyproject.toml``): found again from anywhere inside another checkout of the project."""
    builtin: bool = False
    """A built-in suite, found by its name wherever passhat is installed."""
    case_meta: dict[str, CaseMeta] = Field(default_factory=dict)
    """Case id → tags, group, split, domain and fixture."""
    domains: dict[str, str] = Field(default_factory=dict)
    """Domain name → content hash: a case is comparable across suite versions only if its domain is unchanged."""
    fixtures: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Domain name → fixture name → hash of the fixture's built state, so a change is named down to the fixture
    (older manifests do not record it)."""


class Redaction(BaseModel):
    """Which values were redacted before anything reached disk (rules, never values)."""

    model_config = _DOCS
    enabled: bool
    """False with ``--no-redact``: raw values are on disk."""
    patterns: list[str] = Field(default_factory=list)
    """Names of the patterns applied (``card``, ``email``, ``phone``, and ``--redact-pattern`` names)."""
    fields: list[str] = Field(default_factory=list)
    """Keys whose every value is redacted (``--redact-field``)."""
    numbered: bool = False
    """Each distinct value had its own placeholder (``[REDACTED:email:1]``); ``passhat shadow`` redacts so."""


class CassetteInfo(BaseModel):
    """External tools recorded to (``--record``) or answered from (``--replay``) a cassette folder."""

    model_config = _DOCS
    mode: Literal["record", "replay", "shadow"]
    """``record``: real calls, stored; ``replay``: answered from the folder; ``shadow``: read tools answered
    from production's recorded calls where they match (``passhat shadow``, docs/shadow.md)."""
    folder: str
    """The cassette folder."""


class Sanity(BaseModel):
    """The do-nothing check run before the trials."""

    model_config = _DOCS
    checked: bool
    """False when skipped (``--no-sanity``)."""
    noop_passes: list[str] = Field(default_factory=list)
    """Cases an agent that does nothing passes: their assertions do not prove the work was done."""


class SuiteSize(BaseModel):
    """The full suite a selection was made from."""

    model_config = _DOCS
    hash: str
    """Its content hash."""
    cases: int
    """Its number of cases."""


class Selection(BaseModel):
    """Which cases of the full suite were chosen (``--split``, ``--tag``, or case ids)."""

    model_config = _DOCS
    filter: dict[str, Any]
    """The filter as given: ``split`` (any of), ``tags`` (every key, any value), ``ids``."""
    describe: str
    """The filter in words, e.g. ``split=holdout risk=high``."""
    cases: list[str]
    """The ids chosen."""
    full_suite: SuiteSize
    """``hash`` and number of ``cases`` of the suite they were chosen from."""


class GateRegistration(BaseModel):
    """A gate recorded before the first trial (``passhat run --gate``): ``passhat gate`` checks the file against it."""

    model_config = _DOCS
    path: str
    """The gate file, resolved."""
    sha256: str
    """Hash of its bytes: any edit after the run started is visible."""
    registered_at: str
    """When it was registered (ISO 8601 UTC)."""
    name: str | None = None
    """The gate's name."""
    gate: dict[str, Any] = Field(default_factory=dict)
    """Its parsed rules, used when the file is gone."""


# The ``sequential`` block of manifest.json, summary.json and gate.json: a sequential run's looks
# (``passhat run --gate FILE --sequential``: docs/gates.md, design 027). The manifest records the design
# before the first trial and each look as it is taken; the summary and gate.json repeat where it stopped.

StopReason = Literal["decided", "failed", "max_trials"]


class SequentialDesign(BaseModel):
    """The looks and how α is spent across them, fixed before the first trial."""

    model_config = _DOCS
    looks: list[int]
    """Trials per case at each look, increasing; the last is the most a case gets."""
    spending: Literal["pocock", "obrien_fleming", "hwang_shih_decani"] = "obrien_fleming"
    """The Lan–DeMets spending function of the gate (O'Brien–Fleming type: 2 − 2Φ(z_{1−α/2}/√τ)); a run
    resumes with the spending it recorded."""
    gamma: float | None = None
    """The γ of Hwang–Shih–DeCani spending, α(1 − e^{−γτ})/(1 − e^{−γ}); None for the other functions (and
    in manifests written before it existed)."""
    time_scale: Literal["trials"] = "trials"
    """What τ measures: trials per case at the look over trials per case at the last look."""
    spend_at: Literal["every_look", "decidable_looks"] = "every_look"
    """Where a rule's side (PASS or FAIL) spends α: at every look it is tested, or only at looks where a
    perfect look could decide it (design note 033); ``every_look`` in manifests written before it existed."""


class SequentialBaseline(BaseModel):
    """The baseline run the looks compared with (a sequential run is always gated against it)."""

    model_config = _DOCS
    folder: str
    """Its run folder, absolute."""
    trials_bytes: int
    """The size of its trials.jsonl: another run at the same path is not mistaken for it."""


class SequentialLook(BaseModel):
    """What the gate decided at one look."""

    model_config = _DOCS
    look: int
    """1-based position among the design's looks."""
    trials_per_case: int
    """Trials per case at this look."""
    outcome: str
    """The gate's outcome had the run ended here."""
    settled: dict[str, str] = Field(default_factory=dict)
    """Rules whose verdict became final at this look → that verdict."""
    levels: dict[str, float] = Field(default_factory=dict)
    """Rules tested at this look → the nominal one-sided level of the test (below the rule's α)."""
    stop: StopReason | None = None
    """Why the run stopped here (None: it went on)."""


class SequentialStop(BaseModel):
    """Where a sequential run stopped, why, and what it saved against the fixed design."""

    model_config = _DOCS
    look: int
    """The look it stopped at (1-based)."""
    trials_per_case: int
    """Trials per case run."""
    reason: StopReason
    """``decided`` (every rule settled), ``failed`` (a final FAIL: the gate fails whatever more trials show)
    or ``max_trials`` (the last look)."""
    outcome: str
    """The gate's outcome at that look."""
    trials_run: int
    """Trials recorded (graded and infrastructure errors)."""
    fixed_design_trials: int
    """Trials the fixed design at the last look would have run: cases × the last look."""
    trials_saved: int
    """``fixed_design_trials − trials_run``."""
    confidence: float
    """Two-sided confidence of the summary's suite intervals at this look: repeated confidence intervals
    that cover at every look together, so whichever look the run stopped at (0.95 spent across the looks)."""


class SequentialRecord(BaseModel):
    """``manifest.sequential`` and ``summary.sequential``: the design, the looks taken, where it stopped."""

    model_config = _DOCS
    design: SequentialDesign
    """The looks and the spending function."""
    baseline: SequentialBaseline | None = None
    """The baseline the looks compared with (None: none; baseline rules were SKIPPED)."""
    looks: list[SequentialLook] = Field(default_factory=list)
    """Every look taken so far, in order."""
    evaluated_at: str | None = None
    """When the last look was evaluated (ISO 8601 UTC)."""
    stopped: SequentialStop | None = None
    """Where and why the run stopped (None while it runs, or if it was killed between looks)."""


class SequentialGateInfo(BaseModel):
    """gate.json's ``sequential`` block: the looks the gate was decided at."""

    model_config = _DOCS
    looks: list[SequentialLook] = Field(default_factory=list)
    """Every look replayed, in order."""
    looks_planned: int | None = None
    """How many looks the design has."""
    stopped: SequentialStop | None = None
    """Where the run stopped, why, and what it saved (None: it has not stopped)."""


class FrozenCheck(BaseModel):
    """The suite snapshot a run was checked against before it started (``--frozen``)."""

    model_config = _DOCS
    path: str
    """The snapshot file."""
    hash: str
    """The suite hash both had."""
    frozen_at: str | None = None
    """When the snapshot was written (ISO 8601 UTC)."""
    snapshot_passhat_version: str | None = None
    """The passhat that wrote the snapshot."""
    sha256: str | None = None
    """Hash of the snapshot file's bytes."""


class ModelInfo(BaseModel):
    """A model as configured for one role: what its client describes (provider, model, endpoint, sampling,
    prompt hash, price; never a key). Fields other than those below depend on the provider and are kept."""

    model_config = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS, extra="allow")
    spec: str | None = None
    """``PROVIDER:MODEL`` as given (the agent's model)."""
    provider: str | None = None
    """``openai``, ``anthropic``…"""
    model: str | None = None
    """The model's name at its provider."""
    price: dict[str, float] | None = None
    """USD per million tokens, ``input_per_mtok`` and ``output_per_mtok`` (None: unpriced, its cost recorded as 0)."""


class RoleModels(BaseModel):
    """The models as configured, per role (a role without a model is absent)."""

    model_config = _DOCS
    agent: ModelInfo | None = None
    """The agent's model (``openai:MODEL`` and ``anthropic:MODEL`` agents)."""
    user: ModelInfo | None = None
    """The model playing the user (``--user``)."""
    judge: ModelInfo | None = None
    """The LLM judge (``--judge``)."""


class OutcomeChange(BaseModel):
    """A trial whose outcome a re-grade changed."""

    model_config = _DOCS
    case_id: str
    """The case."""
    trial: int
    """The trial's index."""
    before: str
    """Its outcome in the source run."""
    after: str
    """Its outcome re-graded."""


class RegradeInfo(BaseModel):
    """What ``passhat regrade`` did: the source run, what changed in the suite, which outcomes changed."""

    model_config = _DOCS
    source: str
    """The source run folder (never modified)."""
    source_suite_hash: str | None = None
    """The suite hash of the source run."""
    source_case_hashes: dict[str, str] = Field(default_factory=dict)
    """Case id → its hash in the source run, for the cases re-graded."""
    changed_cases: list[str] = Field(default_factory=list)
    """Cases whose content changed since the source run."""
    domains_changed: list[str] = Field(default_factory=list)
    """Domains whose code, fixtures or policy changed since."""
    missing_cases: list[str] = Field(default_factory=list)
    """Cases of the source run that the suite no longer has (their trials are skipped)."""
    skipped_trials: int = 0
    """Trials of those cases."""
    graders: list[str] = Field(default_factory=list)
    """The built-in graders used."""
    custom_graders: dict[str, dict[str, str]] = Field(default_factory=dict)
    """Domain → custom grader name → its kind."""
    judge_grades: str | None = None
    """How the judge's grades were treated (carried over, not re-judged)."""
    passhat_version: str | None = None
    """The passhat that re-graded."""
    regraded_at: str | None = None
    """When (ISO 8601 UTC)."""
    trials: int = 0
    """Trials re-graded."""
    outcome_changes: list[OutcomeChange] = Field(default_factory=list)
    """Trials whose outcome changed."""


RUN_FILES = ("manifest.json", "trials.jsonl", "summary.json")
"""The files of a run folder that its readers open."""


class Manifest(FileModel):
    """``manifest.json``: everything needed to say what a run measured and to resume it exactly.

    Fields this passhat does not know (written by a newer one within the same schema version) are kept
    when the manifest is read and written back.
    """

    model_config = ConfigDict(extra="allow")
    schema_version: Literal["passhat.manifest/1"] = "passhat.manifest/1"
    """``passhat.manifest/1``; a manifest without a version was written before versions were recorded and
    has this shape."""
    suite: SuiteInfo
    """The suite and every case's hash."""
    agent: str
    """The agent as given: a spec (``careful``, ``module:function``, ``openai:MODEL``…) or a Python object's name."""
    trials: int
    """Trials planned per case."""
    seed: int = 0
    """The run seed; every trial's seed derives from it and the case id."""
    passhat_version: str | None = None
    """The passhat that ran it."""
    python: str | None = None
    """The Python version."""
    platform: str | None = None
    """The operating system and machine."""
    concurrency: int | None = None
    """Trials in flight at once."""
    executor: dict[str, Any] | None = None
    """What ran the trials: ``{"kind": "local"}`` (asyncio workers in the run's process), ``{"kind": "processes",
    "workers": N}`` (processes forked by it) or ``{"kind": "ray", "address": …, "workers": N}``; a resumed run
    records the executor of its latest session."""
    redaction: Redaction | None = None
    """What was redacted before reaching disk."""
    cassette: CassetteInfo | None = None
    """External tools recorded or replayed (None: called for real)."""
    started_at: str | None = None
    """When the run started (ISO 8601 UTC); kept when it is resumed."""
    finished_at: str | None = None
    """When the last trial was recorded (None while running)."""
    resumed_at: list[str] = Field(default_factory=list)
    """When it was resumed, if ever."""
    status: str = "running"
    """``running`` (or killed), then ``complete``; ``aborted`` when the loop's watchdog ended the run (an
    in-process agent blocked the event loop: ``aborted_because`` says which); a gate never gives a final
    PASS on an incomplete run."""
    aborted_because: str | None = None
    """Why the run was aborted before every trial ran (``status: aborted``)."""
    replaced_workers: list[str] = Field(default_factory=list)
    """Why each Ray worker killed and replaced during the run was given up on: an in-process agent held its
    event loop past the trial's limit and grace (the trial is recorded ``time_limit``), or the worker stopped
    answering (something held its GIL). The run went on, but ``passhat run`` exits 4 when this is not empty:
    the same agent under the local executor aborts the run (docs/design/022)."""
    sanity: Sanity | None = None
    """The do-nothing check."""
    isolate: Literal["none", "process"] = "none"
    """``process``: the Python agent ran in a process of its own per trial."""
    models: RoleModels = Field(default_factory=RoleModels)
    """Role (``agent``, ``user``, ``judge``) → the model as configured: provider, model, endpoint, sampling,
    prompt hash, price (never a key)."""
    agent_runtime: dict[str, Any] | None = None
    """How an agent that runs elsewhere was run: a service URL, a command's argv, an isolated process."""
    selection: Selection | None = None
    """The cases chosen out of the full suite (None: every case)."""
    frozen: FrozenCheck | None = None
    """The snapshot the suite was checked against (``--frozen``)."""
    gate: GateRegistration | None = None
    """The gate registered before the first trial."""
    options: dict[str, Any] | None = None
    """The run's options as given to it (:class:`passhat.api.RunOptions`, every field, paths absolute): what
    ``--resume`` continues with. None in manifests written before they were recorded."""
    regrade: RegradeInfo | None = None
    """For a re-graded run: its source run and what changed."""
    sequential: SequentialRecord | None = None
    """For a sequential run (``--sequential``): the looks planned before the first trial, each look taken, and
    where the run stopped (``trials`` is then the most a case gets: the last look)."""

    @classmethod
    def of_run(cls, folder: Path | str) -> Manifest:
        """The ``manifest.json`` of a run folder; a folder without one is not a run folder.

        Every reader of a run folder starts here, so here the folder's files are checked to be files: a
        named pipe in place of ``manifest.json``, ``trials.jsonl`` or ``summary.json`` blocked the reader
        for ever (``passhat show`` hung), and a device (a link to ``/dev/null``) read as a run of no trials.
        """
        if Path(folder).exists() and not Path(folder).is_dir():  # not "FOLDER/manifest.json: Not a directory"
            raise RunError(f"{folder} is a file, not a run folder (a folder holding manifest.json and trials.jsonl)")
        for name in RUN_FILES:
            path = Path(folder) / name
            try:
                mode = os.stat(path).st_mode
            except OSError:
                continue  # missing, or unreadable: the reader's own error says so
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # a directory fails at once, naming itself
                raise RunError(f"{path}: is {special_kind(path)}; a run folder holds regular files")
        try:
            return cls.load(Path(folder) / "manifest.json")
        except FileNotFoundError:
            raise RunError(f"{folder} is not a run folder (no manifest.json)") from None

    def case_meta(self, case_id: str) -> CaseMeta:
        """The case's recorded tags, group, split, domain (empty when the manifest does not say)."""
        return self.suite.case_meta.get(case_id) or CaseMeta()
