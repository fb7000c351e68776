"""Per-case tallies streamed from trial records (one pass, O(cases) memory).

``tally`` takes parsed ``TrialRecord`` objects. ``tally_file`` reads a ``trials.jsonl`` itself and
validates only the fields a tally uses (``TallyRecord``): parsing whole records — messages, traces,
diffs, spans — was 84 of the 99 s ``passhat show`` took on 10,000 cases × 16 trials, and a tally
needs none of it. The file rules are the store's (``RunStore.iter_records``): an unterminated last line
(a write killed mid-way) is skipped, any other line that does not parse is an error naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel

from passhat.results.written import complete_lines
from passhat.runner.store import read_records

if TYPE_CHECKING:
    from passhat.redaction import Redactor
    from passhat.runner.records import TrialRecord


@dataclass
class CaseTally:
    """Counts and per-trial measurements of one case. Errors are neither passes nor failures."""

    case_id: str
    passes: int = 0
    fails: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    costs: list[float] = field(default_factory=list)
    user_costs: list[float] = field(default_factory=list)
    """Cost of the model-played user per graded trial (0 for the scripted user)."""
    judge_costs: list[float] = field(default_factory=list)
    """Cost of the LLM judge per graded trial (0 without a judge)."""
    steps: list[int] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    ttft: list[float] = field(default_factory=list)
    failure_reasons: list[str] = field(default_factory=list)
    failure_trials: list[int] = field(default_factory=list)
    """The trial of each entry of ``failure_reasons`` (so a report can point at the record)."""
    categories: dict[str, int] = field(default_factory=dict)
    """Failure category → trials (infrastructure errors included, under ``infrastructure_error``)."""

    @property
    def n(self) -> int:
        """Graded trials (pass + fail)."""
        return self.passes + self.fails

    replayed: int = 0
    """Trials whose external tools were answered from a cassette (``--replay``)."""
    faults_not_applied: dict[str, int] = field(default_factory=dict)
    """``fault: why it did not apply`` → trials (``ToolCall.fault_not_applied``)."""
    faults_acted: dict[str, int] = field(default_factory=dict)
    """Fault (as a call's ``fault`` names it) → graded trials in which it acted on at least one call. A planned
    fault's graded trials less these are those that never reached it (``case_entry``: the plan is the
    manifest's, not the records')."""

    def add(self, r: TallySource) -> None:
        for why in {f"{c.fault}: {c.fault_not_applied}" for c in r.calls if c.fault_not_applied is not None}:
            self.faults_not_applied[why] = self.faults_not_applied.get(why, 0) + 1
        if r.outcome != "error":  # an infrastructure error is no trial of the agent's: it reached no fault or all
            for fault in {c.fault for c in r.calls if c.fault is not None}:
                self.faults_acted[fault] = self.faults_acted.get(fault, 0) + 1
        failure = r.failure
        if failure is not None:
            self.categories[failure.category] = self.categories.get(failure.category, 0) + 1
        if r.replayed:
            self.replayed += 1
        outcome = r.outcome
        if outcome == "error":
            self.errors += 1
            return
        if outcome == "pass":
            self.passes += 1
        else:
            self.fails += 1
            first = r.failed_grades()[:1]
            if first:
                self.failure_reasons.append(f"{first[0].name}: {first[0].reason}")
                self.failure_trials.append(r.trial)
        usage, user, judge = r.usage, r.user_usage, r.judge_usage
        self.latencies.append(r.timing.agent_s)
        self.costs.append(usage.cost)
        self.user_costs.append(user.cost if user else 0.0)
        self.judge_costs.append(judge.cost if judge else 0.0)
        self.steps.append(len(r.calls))
        self.tokens.append(usage.input_tokens + usage.output_tokens)
        if usage.time_to_first_token_s is not None:
            self.ttft.append(usage.time_to_first_token_s)


def tally(records: Iterable[TallySource], case_ids: Iterable[str] = ()) -> dict[str, CaseTally]:
    """Tallies for every case in ``case_ids`` (in that order, even with no records) and any other seen."""
    out = {cid: CaseTally(cid) for cid in case_ids}
    for r in records:
        out.setdefault(r.case_id, CaseTally(r.case_id)).add(r)
    return out


class _Grade(BaseModel):
    name: str
    passed: bool
    reason: str
    required: bool = True


class _Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    time_to_first_token_s: float | None = None


class _Timing(BaseModel):
    agent_s: float = 0.0


class _Failure(BaseModel):
    category: str


class _Call(BaseModel):
    """Counted; only the fault that acted on it, and why it did not apply, are read."""

    fault: str | None = None
    fault_not_applied: str | None = None


class TallyRecord(BaseModel):
    """The fields of a ``TrialRecord`` that a tally reads; every other field is skipped unparsed."""

    case_id: str
    trial: int = 0
    outcome: Literal["pass", "fail", "error"]
    grades: list[_Grade] = []
    calls: list[_Call] = []
    usage: _Usage = _Usage()
    user_usage: _Usage | None = None
    judge_usage: _Usage | None = None
    timing: _Timing
    failure: _Failure | None = None
    replayed: bool = False

    def failed_grades(self) -> list[_Grade]:
        return [g for g in self.grades if g.required and not g.passed]


class _CallFields(Protocol):
    @property
    def fault(self) -> str | None: ...
    @property
    def fault_not_applied(self) -> str | None: ...


class _GradeFields(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def reason(self) -> str: ...


class _UsageFields(Protocol):
    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cost(self) -> float: ...
    @property
    def time_to_first_token_s(self) -> float | None: ...


class _TimingFields(Protocol):
    @property
    def agent_s(self) -> float: ...


class _FailureFields(Protocol):
    @property
    def category(self) -> str: ...


class TallySource(Protocol):
    """What ``CaseTally.add`` reads: a ``TrialRecord`` or a ``TallyRecord``."""

    @property
    def case_id(self) -> str: ...
    @property
    def trial(self) -> int: ...
    @property
    def outcome(self) -> str: ...
    @property
    def failure(self) -> _FailureFields | None: ...
    @property
    def timing(self) -> _TimingFields: ...
    @property
    def usage(self) -> _UsageFields: ...
    @property
    def user_usage(self) -> _UsageFields | None: ...
    @property
    def judge_usage(self) -> _UsageFields | None: ...
    @property
    def calls(self) -> Sequence[_CallFields]: ...
    @property
    def replayed(self) -> bool: ...
    def failed_grades(self) -> Sequence[_GradeFields]: ...  # noqa: D102


def tally_records(path: Path) -> Iterator[TallyRecord]:
    """Stream the tally fields of every record in a ``trials.jsonl`` (see the module docstring for the rules)."""
    return read_records(path, TallyRecord)


class ReportedTally:
    """A run's tallies kept as its records become durable (``on_record``), so that its summary need not read
    ``trials.jsonl`` back after the last trial: for 1,024 refunds records that read was ~0.1 s of the event
    loop's thread, the run's last work before it returns (docs/design/040).

    The fields are taken from each record with its strings redacted as its stored line holds them, which is
    exact only where the redactor redacts every string on its own (:attr:`Redactor.on_text`: off, or the
    default patterns alone; design 032 holds that path and the stored text to the same bytes); numbers are
    the same after JSON's round trip. :meth:`tallies` also asks that ``trials.jsonl`` holds as many complete
    lines as records were added (a new run, not a resumed one whose earlier records were never reported here).
    Otherwise it returns None, and the summary reads the file back as before."""

    def __init__(self, redactor: Redactor) -> None:
        self.exact = redactor.on_text
        """Whether the records' own strings, redacted one by one, are those their stored lines hold."""
        self._text = redactor.text if redactor.enabled else _same
        self._tallies: dict[str, CaseTally] = {}
        self.records = 0
        """Records added."""

    def add(self, record: TrialRecord) -> None:
        """Tally one durable record (in the order they were written)."""
        if not self.exact:
            return
        stored = _Stored(record, self._text)
        found = self._tallies.get(stored.case_id)
        if found is None:
            found = self._tallies[stored.case_id] = CaseTally(stored.case_id)
        found.add(stored)
        self.records += 1

    def tallies(self, path: Path, case_ids: Iterable[str]) -> dict[str, CaseTally] | None:
        """What :func:`tally` of ``path``'s records gives, cases in ``case_ids``' order then any other (None when
        that cannot be vouched for: see the class docstring)."""
        if not self.exact or complete_lines(path) != self.records:
            return None
        out = {cid: self._tallies.get(cid) or CaseTally(cid) for cid in case_ids}
        for cid, found in self._tallies.items():
            out.setdefault(cid, found)
        return out


def _same(value: str) -> str:
    return value


class _Stored:
    """The tally fields of a record as its stored line holds them: its strings redacted, the numbers as they
    are. A view made and dropped in :meth:`ReportedTally.add`: nothing of the record is kept."""

    __slots__ = ("_failed", "calls", "case_id", "failure", "judge_usage", "outcome", "replayed", "timing", "trial",
                 "usage", "user_usage")

    def __init__(self, record: TrialRecord, text: Callable[[str], str]) -> None:
        self.case_id = text(record.case_id)
        self.trial = record.trial
        self.outcome = record.outcome
        self.failure = None if record.failure is None else _Failure(category=text(record.failure.category))
        self.timing, self.usage = record.timing, record.usage
        self.user_usage, self.judge_usage = record.user_usage, record.judge_usage
        self.replayed = record.replayed
        calls: Sequence[_CallFields] = record.calls
        if any(c.fault is not None for c in calls):  # only then are a call's strings read
            calls = [_Call(fault=None if c.fault is None else text(c.fault),
                           fault_not_applied=None if c.fault_not_applied is None else text(c.fault_not_applied))
                     for c in record.calls]
        self.calls = calls
        self._failed = [_Grade(name=text(g.name), passed=False, reason=text(g.reason))
                        for g in record.grades if g.required and not g.passed]

    def failed_grades(self) -> list[_Grade]:
        return self._failed
