"""``Run``: a run folder with typed access — manifest, streamed records, summary, comparison, gate.

``evaluate()`` returns one; ``Run.open(folder)`` opens any run folder (finished, killed, or from
``passhat run``). The summary is ``summary.json`` when it counts every record, otherwise recomputed from
the records (``Run.summarize()`` also writes it).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from passhat.errors import PasshatError
from passhat.metric_names import headline_ks
from passhat.models import Manifest
from passhat.rounding import interval
from passhat.runner.health import DEFAULT_MAX_ERROR_RATE
from passhat.runner.records import TrialRecord
from passhat.runner.store import RunStore, read_records

if TYPE_CHECKING:  # the summary's models too: built once a run has its summary, not before its first trial
    from passhat.api.options import RunOptions
    from passhat.models import Comparison, GateResult, Interval, Summary


@dataclass(frozen=True)
class CaseFailure:
    """A case that did not pass every trial, with the first thing that went wrong in its first failing trial."""

    case_id: str
    passed: int
    """Trials that passed."""
    graded: int
    """Trials graded (pass or fail)."""
    errors: int
    """Trials that ended in infrastructure errors (neither pass nor fail)."""
    trial: int | None
    """The first failing (or errored) trial's index."""
    check: str | None
    """Its first failing required check, ``name: reason`` — or the agent's error, or the infrastructure error."""
    category: str | None
    """Its failure category (docs/failures.md), e.g. ``duplicate_write``."""

    def __str__(self) -> str:
        counts = f"{self.passed}/{self.graded} passed" + (f", {self.errors} infrastructure error(s)" if self.errors else "")
        where = f"trial {self.trial}: " if self.trial is not None else ""
        what = f" — {where}{self.check}" if self.check else ""
        category = f" [{self.category}]" if self.category else ""
        return f"{self.case_id}: {counts}{what}{category}"


class _Grade(BaseModel):
    name: str
    passed: bool
    reason: str
    required: bool = True


class _Failure(BaseModel):
    category: str
    evidence: str = ""


class _FailureFields(BaseModel):
    """The fields of a trial record that say what failed (the rest is skipped unparsed)."""

    case_id: str
    trial: int
    outcome: Literal["pass", "fail", "error"]
    grades: list[_Grade] = []
    error: str | None = None
    failure: _Failure | None = None

    def first_problem(self) -> str | None:
        failed = [g for g in self.grades if g.required and not g.passed]
        if failed:
            return f"{failed[0].name}: {failed[0].reason}"
        if self.error:
            from passhat.runner.health import headline

            return headline(self.error)
        return self.failure.evidence if self.failure else None


class Run:
    """A run folder: ``manifest.json``, ``trials.jsonl``, ``summary.json`` (and ``gate.json`` when gated)."""

    def __init__(self, folder: str | Path, *, manifest: Manifest | None = None, summary: Summary | None = None,
                 gate_result: GateResult | None = None, gate_error: str | None = None,
                 warnings: Sequence[str] = ()) -> None:
        self.folder = Path(folder)
        """The run folder."""
        self._manifest = manifest
        self._summary = summary
        self.gate_result = gate_result
        """The gate registered before the run, as evaluated at its end (``gate.json``); None without one."""
        self.gate_error = gate_error
        """Why the registered gate could not be evaluated (bad input: ``passhat run`` exits 2), else None."""
        self.warnings = list(warnings)
        """What the run warned about (cases a do-nothing agent passes, unpriced models)."""

    @classmethod
    def open(cls, folder: str | Path) -> Run:
        """An existing run folder; its manifest is read (and checked) now, its summary when first asked for."""
        from passhat.gate import read_gate_result

        store = RunStore(Path(folder))
        return cls(folder, manifest=store.manifest(), gate_result=read_gate_result(Path(folder)))

    @property
    def manifest(self) -> Manifest:
        """What was run: suite and case hashes, agent, trials, seed, versions, the registered gate."""
        if self._manifest is None:
            self._manifest = RunStore(self.folder).manifest()
        return self._manifest

    @property
    def options(self) -> RunOptions | None:
        """The options the run was started with (None for a run recorded before passhat kept them)."""
        from passhat.api.options import RunOptions

        stored = self.manifest.options
        return None if stored is None else RunOptions.model_validate(stored)

    @property
    def summary(self) -> Summary:
        """pass^k and pass@k per case and for the suite, with intervals (see :class:`passhat.models.Summary`)."""
        if self._summary is None:
            from passhat.results import read_summary

            self._summary = read_summary(self.folder)
        return self._summary

    def summarize(self, by: Sequence[str] = ()) -> Summary:
        """Recompute the summary from ``trials.jsonl`` (with strata ``by`` and every tag key) and write ``summary.json``."""
        from passhat.results import summarize_run, tag_keys

        self._summary = summarize_run(self.folder, by=list(dict.fromkeys([*by, *tag_keys(self.manifest)])))
        return self._summary

    def records(self) -> Iterator[TrialRecord]:
        """Every trial record, streamed from ``trials.jsonl`` (memory stays flat whatever the run's size)."""
        return RunStore(self.folder).iter_records()

    @property
    def complete(self) -> bool:
        """Every planned trial was recorded (``status: complete``)."""
        return self.manifest.status == "complete"

    def pass_hat_k(self, k: int) -> Interval:
        """The suite's pass^k — every one of k trials of a case passes — with its interval over cases."""
        return self._interval("pass_hat_k", k)

    def pass_at_k(self, k: int) -> Interval:
        """The suite's pass@k — at least one of k trials passes — with its interval over cases."""
        return self._interval("pass_at_k", k)

    def _interval(self, metric: Literal["pass_hat_k", "pass_at_k"], k: int) -> Interval:
        symbol = "^" if metric == "pass_hat_k" else "@"
        entry = getattr(self.summary.suite, metric).get(k)
        if entry is None or entry.estimate is None:
            have = max((c.n for c in self.summary.cases), default=0)
            raise PasshatError(f"pass{symbol}{k} of {self.folder}: no case has {k} graded trials (at most {have}, "
                               f"{self.summary.suite.errors} infrastructure error(s)); run with trials ≥ {k}")
        return entry

    def failures(self) -> list[CaseFailure]:
        """Cases that did not pass every trial, least reliable first, each with its first failing check."""
        firsts: dict[str, _FailureFields] = {}
        for r in read_records(RunStore(self.folder).trials_path, _FailureFields):
            if r.outcome != "pass" and (r.case_id not in firsts or r.trial < firsts[r.case_id].trial):
                firsts[r.case_id] = r
        out = []
        for c in self.summary.cases:
            if c.passed_every_trial and not c.errors:
                continue
            first = firsts.get(c.id)
            out.append(CaseFailure(c.id, c.successes, c.n, c.errors, first.trial if first else None,
                                   first.first_problem() if first else None,
                                   first.failure.category if first and first.failure else None))
        return sorted(out, key=lambda f: f.passed / f.graded if f.graded else 0.0)

    def failure_report(self, limit: int = 20) -> str:
        """The failing cases in words, one per line (what the pytest plugin prints under a failed test)."""
        failures = self.failures()
        s = self.summary.suite
        head = (f"{s.name} · {self.summary.agent}: {len(failures)} of {s.cases} case(s) did not pass every trial "
                f"({self.folder})")
        lines = [head, *(f"  {f}" for f in failures[:limit])]
        if len(failures) > limit:
            lines.append(f"  … and {len(failures) - limit} more (every case is in {self.folder / 'summary.json'})")
        return "\n".join(lines)

    def compare(self, baseline: Run | str | Path, *, allow_changed_cases: bool = False, by: Sequence[str] = (),
                seed: int = 0, confidence: float = 0.95, interval: Literal["t", "bca"] = "t") -> Comparison:
        """This run (the candidate) against ``baseline``, case by case (``passhat compare BASELINE THIS``)."""
        from passhat.compare import compare_folders

        base = baseline.folder if isinstance(baseline, Run) else Path(baseline)
        return compare_folders(base, self.folder, allow_changed_cases=allow_changed_cases, by=by, seed=seed,
                               confidence=confidence, interval=interval)

    def gate(self, file: str | Path | None = None, baseline: Run | str | Path | None = None, *,
             allow_gate_change: bool = False, allow_changed_cases: bool = False, write: bool = True) -> GateResult:
        """Evaluate a gate on this run (``passhat gate``): the registered one, or ``file``; ``write`` puts the
        result in ``gate.json``. A gate file changed since it was registered is refused unless
        ``allow_gate_change`` (recorded in the result)."""
        from passhat.gate import evaluate_gate, write_gate_result

        base = baseline.folder if isinstance(baseline, Run) else None if baseline is None else Path(baseline)
        result = evaluate_gate(self.folder, None if file is None else Path(file), base,
                               allow_gate_change=allow_gate_change, allow_changed_cases=allow_changed_cases)
        if write:
            write_gate_result(self.folder, result)
        return result

    def incomplete(self, max_error_rate: float = DEFAULT_MAX_ERROR_RATE) -> str | None:
        """Why the run did not measure the agent cleanly (too many infrastructure errors, or Ray workers that
        had to be replaced because an agent blocked their event loop), or None."""
        from passhat.runner.health import incomplete

        return incomplete(self.summary, self.records(), max_error_rate, self.manifest.replaced_workers)

    def __repr__(self) -> str:
        try:
            s = self.summary.suite
            n = s.trials_per_case
            ks = headline_ks(n)
            shown = ", ".join(f"pass^{k} {_brief(s.pass_hat_k.get(k))}" for k in ks)
            return f"<passhat.Run {s.name} · {self.summary.agent}: {shown} over {s.cases} case(s) ({self.folder})>"
        except PasshatError:
            return f"<passhat.Run {self.folder}>"


def _brief(iv: Interval | None) -> str:
    if iv is None or iv.estimate is None:
        return "—"
    if iv.ci_low is None or iv.ci_high is None:
        return f"{iv.estimate:.3f}"
    return f"{iv.estimate:.3f} {interval(iv.ci_low, iv.ci_high)}"
