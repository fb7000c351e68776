"""A gate on a sequential run: every rule decided at the run's planned looks, with α spent across them.

A sequential run (``passhat run --gate FILE --sequential``) evaluates its gate after 4, 8, 16… trials per
case and stops once the gate's outcome is known. This module is that evaluation, replayed from the records:
the look at n trials sees exactly the trials numbered below n, so ``passhat gate RUN`` later, a resumed run
and the run itself all reach the same verdicts at the same looks, and gating again is never a new look.

At each look:

- a rule still open is tested at the look's *nominal* level (``Sequential.levels``: O'Brien–Fleming-type spending on
  the trial scale, boundaries from the correlation of the rule's estimates across its looks), Holm across
  the FAIL-capable rules as on a finished run (a FAIL kept at an earlier look passes its α on);
- each side of a suite-mean rule spends α only at the looks where it can decide at all (``decidable``): a
  look where even a perfect look (every trial passing; for FAIL, every trial failing) would not cross the
  bar at the most that look can be tested at spends nothing on that side, and the next look catches up.
  Near the ceiling with few cases the PASS side cannot decide before the last look whatever the data
  (design note 033), and the α an earlier look would spend there is what the last look then lacks;
- a PASS or FAIL of an inference (``case_success_rate``, ``pass_hat_k``, ``pass_at_k``, ``non_inferior``) is
  final: it *settles* the rule. ``never_fails`` settles on a failed trial, and on PASS only when it states
  how much evidence it needs (``min_lower_bound``); ``no_new_failures`` settles on FAIL. Their other PASS
  says "nothing seen yet", which more trials can only sharpen, so it keeps the run going (design 027);
- budgets (``latency``, ``cost_per_success``) describe the trials run and calibration or canary files do
  not change with trials: neither holds a run open;
- the run stops when every rule is settled or cannot hold it open (``decided``), when a settled FAIL
  means the gate fails whatever more trials show (``failed``), or at the last look (``max_trials``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from passhat.compare import LoadedRun, Matching
from passhat.gate.context import GateInput, RuleInputError
from passhat.gate.evaluate import EVALUATORS, FAIL_FAMILY, MEANS, decide_rules, rule_alphas, rule_results
from passhat.gate.load import GateError
from passhat.gate.model import CaseSuccessRate, NeverFails, NonInferior, PassHatK
from passhat.gate.outcome import Outcome, RuleResult, Verdict, overall
from passhat.gate.schema import GateFile
from passhat.metric_names import PassMetric
from passhat.models import Manifest
from passhat.models.manifest import SequentialBaseline, SequentialLook, SequentialRecord, SequentialStop
from passhat.results.tally import TallyRecord, tally
from passhat.sequential.design import Sequential
from passhat.stats import estimate
from passhat.stats._resample import cluster_se, resampling_units, unit_totals

StopReason = Literal["decided", "failed", "max_trials"]
"""Why a sequential run stopped: every rule decided; a final FAIL; or the last look reached."""

INFERENCES = {"case_success_rate", "pass_hat_k", "pass_at_k", "non_inferior"}
"""Rules whose PASS and FAIL are both tests: either one settles the rule."""
OPEN_ENDED = {"latency", "cost_per_success", "judge_agreement", "canary"}
"""Rules that never hold a run open: budgets describe the trials that ran, files do not change with trials."""
_FLOOR = 1e-12
"""The smallest level a look tests at: a look that spends nothing (a boundary at +∞) still gets a valid,
never-crossing interval rather than a confidence of 1."""


@dataclass(frozen=True)
class Tested:
    """A look at which a rule was tested: what its boundaries need."""

    look: int
    """0-based position in the design's looks."""
    variance: float | None
    """The variance of the rule's estimate there (None: assume independent trials)."""
    sides: tuple[bool, bool]
    """Whether its PASS side and its FAIL side can decide at this look at all (``decidable``)."""


@dataclass(frozen=True)
class Look:
    """What the gate decided at one look."""

    index: int
    """0-based position in the design's looks."""
    trials: int
    """Trials per case at this look."""
    outcome: str
    """The gate's outcome had the run ended here."""
    settled: dict[str, str]
    """Rules settled at this look → their outcome."""
    levels: dict[str, float]
    """Each rule tested at this look → the nominal one-sided level it was tested at (where its two sides were
    tested at different levels: the level of the side that decided it, else the higher one)."""
    stop: StopReason | None
    """Why the run stops here, or None when it goes on."""

    def record(self) -> SequentialLook:
        """The look as ``manifest.sequential.looks`` records it."""
        return SequentialLook(look=self.index + 1, trials_per_case=self.trials, outcome=self.outcome,
                              settled=self.settled, levels={k: round(v, 6) for k, v in self.levels.items()},
                              stop=self.stop)


@dataclass
class SequentialGate:
    """A gate replayed over the looks of a sequential run: the rules' results and the looks."""

    results: list[RuleResult]
    """One per rule, as gate.json holds them, at the last look evaluated."""
    looks: list[Look] = field(default_factory=list)
    """Every look evaluated, in order."""

    @property
    def stopped(self) -> Look | None:
        """The look the run stops at, or None while it goes on (or is unfinished)."""
        return self.looks[-1] if self.looks and self.looks[-1].stop is not None else None


def tally_view(records: Iterable[TallyRecord], case_ids: Sequence[str], trials: int) -> dict[str, Any]:
    """Per-case tallies of the trials numbered below ``trials``: the run as it stood at that look."""
    return tally((r for r in records if r.trial < trials), case_ids)


def complete_looks(records: Sequence[TallyRecord], case_ids: Sequence[str], design: Sequential) -> int:
    """How many of the design's looks have every trial recorded (errors count: they ran)."""
    seen: dict[str, set[int]] = {cid: set() for cid in case_ids}
    for r in records:
        if r.case_id in seen:
            seen[r.case_id].add(r.trial)
    done = 0
    for n in design.looks:
        if all(all(t in trials for t in range(n)) for trials in seen.values()):
            done += 1
        else:
            break
    return done


def look_runs(run_folder: Path, manifest: Manifest, records: Sequence[TallyRecord],
              design: Sequential, upto: int) -> list[LoadedRun]:
    """The run at each of its first ``upto`` looks (``manifest.trials`` set to the look's trials per case,
    so that a case short of them — infrastructure errors — keeps rules from PASS, as on a finished run)."""
    ids = list(manifest.suite.cases)
    return [LoadedRun(Path(run_folder), manifest.model_copy(update={"trials": n, "status": "complete"}),
                      tally_view(records, ids, n)) for n in design.looks[:upto]]


def _cluster_variance(values: list[float], groups: list[str | None]) -> float | None:
    """Cluster-robust variance of a mean over cases (groups count once); None without two units."""
    if len(values) < 2:
        return None
    matrix = np.asarray(values, dtype=float).reshape(-1, 1)
    sums, counts = unit_totals(matrix, resampling_units(groups, len(values)))
    se = float(cluster_se(sums, counts)[0])
    return se * se if math.isfinite(se) and se > 0 else None


def _values(rule: PassHatK | NonInferior | CaseSuccessRate, inp: GateInput) -> tuple[list[float], list[str | None]]:
    """The per-case values whose mean the rule tests (pass^k, pass@k, a pass rate, or a paired difference)."""
    if isinstance(rule, CaseSuccessRate):
        ids = [c for c in inp.selected(rule.select) if inp.run.tallies[c].n]
        return [inp.run.tallies[c].passes / inp.run.tallies[c].n for c in ids], [inp.run.meta(c).group for c in ids]
    metric: PassMetric = rule.metric if isinstance(rule, NonInferior) else rule.kind
    if isinstance(rule, NonInferior):
        base = inp.baseline.tallies if inp.baseline is not None else {}
        ids = [c for c in inp.paired(rule.select) if inp.run.tallies[c].n >= rule.k and base[c].n >= rule.k]
        values = [estimate(inp.run.tallies[c].n, inp.run.tallies[c].passes, rule.k, metric)
                  - estimate(base[c].n, base[c].passes, rule.k, metric) for c in ids]
    else:
        ids = [c for c in inp.selected(rule.select) if inp.run.tallies[c].n >= rule.k]
        values = [estimate(inp.run.tallies[c].n, inp.run.tallies[c].passes, rule.k, metric) for c in ids]
    return values, [inp.run.meta(c).group for c in ids]


def _is_mean(rule: Any, inp: GateInput) -> bool:
    """A rule on a mean over cases, whose per-case values this module can compute."""
    return rule.kind in MEANS or (rule.kind == "non_inferior" and inp.baseline is not None)


def testable(rule: Any, inp: GateInput) -> bool:
    """Whether the rule can decide anything at this look (pass^8 cannot at 4 trials per case): a look where
    it cannot spends none of its α."""
    return bool(_values(rule, inp)[0]) if _is_mean(rule, inp) else True


def variance(rule: Any, inp: GateInput) -> float | None:
    """The variance of the rule's estimate at this look, for the correlation between its looks; None where
    the rule is not a mean over cases (or has no spread): the design then assumes independent trials."""
    return _cluster_variance(*_values(rule, inp)) if _is_mean(rule, inp) else None


def decidable(rule: Any, inp: GateInput, design: Sequential, alpha: float, look: int) -> tuple[bool, bool]:
    """Whether the rule's PASS side and its FAIL side can decide at this look, whatever its trials show.

    For a mean over the run's cases (``MEANS``): a perfect look — every case with all of the look's trials
    passing (for FAIL: failing) — evaluated at the look's cumulative spent α, which is the most the look's
    nominal level can be at any correlation. Gaffke's bounds only rise with each case's value and with the
    level (the perfect look's is exact, Clopper–Pearson's; another look's is a Monte-Carlo estimate of a
    smaller one), so where the perfect look does not cross the bar no look can, but by that Monte-Carlo
    error on a look all but perfect: the side spends nothing there. This depends on the cases, the bar and
    α, never on a trial's outcome, so the design is still fixed before the first trial. Other rules (a
    paired t bound is not monotone in the per-case values), and designs recorded before design note 033:
    both sides at every look.
    """
    if design.spend_at != "decidable_looks" or rule.kind not in MEANS:
        return True, True
    level = design.spent(alpha, look)
    out = []
    for outcome in ("PASS", "FAIL"):
        try:
            out.append(EVALUATORS[rule.kind](rule, inp.perfect(outcome == "PASS"), level).outcome == outcome)
        except RuleInputError:  # the real evaluation reports it
            return True, True
    return out[0], out[1]


def settles(rule: Any, verdict: Verdict) -> bool:
    """Whether this verdict is final for the rule (module docstring)."""
    if verdict.outcome == "SKIPPED":
        return True
    if rule.kind in INFERENCES:
        return verdict.outcome in ("PASS", "FAIL")
    if isinstance(rule, NeverFails):
        return verdict.outcome == "FAIL" or (verdict.outcome == "PASS" and rule.min_lower_bound is not None)
    if rule.kind == "no_new_failures":
        return verdict.outcome == "FAIL"
    return False


def holds_open(rule: Any, verdict: Verdict) -> bool:
    """Whether a rule keeps the run going: not settled, and more trials could change it."""
    return rule.kind not in OPEN_ENDED and verdict.outcome != "SKIPPED" and not settles(rule, verdict)


def evaluate_looks(gate: GateFile, design: Sequential, views: Sequence[LoadedRun], baseline: LoadedRun | None,
                   matching: Matching | None, gate_dir: Path, gate_file: str, *, finished: bool) -> SequentialGate:
    """Replay the gate over ``views`` (the run at each complete look, in order) until it stops.

    ``finished``: the run has ended (stopped at one of these looks or ran every look). When it has not
    (killed mid-way, or gated while running), what is not yet settled is reported INCONCLUSIVE.
    """
    settled: dict[int, tuple[Verdict, int, float]] = {}
    history: dict[int, list[Tested]] = {i: [] for i in range(len(gate.rules))}
    looks: list[Look] = []
    verdicts: list[Verdict] = []
    inp: GateInput | None = None
    for j, run in enumerate(views):
        inp = GateInput(run, baseline, matching, gate_dir, gate.alpha)
        alphas = rule_alphas(gate, inp)
        for i, rule in enumerate(gate.rules):
            if i not in settled and testable(rule, inp):
                history[i].append(Tested(j, variance(rule, inp), decidable(rule, inp, design, alphas[i], j)))
        sides: tuple[dict[int, float], dict[int, float]] = ({}, {})

        def level(i: int, alpha: float, side: int, _j: int = j,
                  _sides: tuple[dict[int, float], dict[int, float]] = sides) -> float:
            tested = history[i]
            if gate.rules[i].kind not in FAIL_FAMILY or not tested or tested[-1].look != _j:
                # never_fails needs no spending (a PASS at a look means every trial so far passed, which at
                # the bar happens at most α of the time whatever the look); budgets and files use no α; a
                # rule that cannot decide at this look says so whatever the level
                return alpha
            at = [t for t in tested if t.sides[side]]
            if not tested[-1].sides[side]:
                nominal = _FLOOR  # this side cannot decide here: it spends nothing
            else:
                variances = [t.variance for t in at]
                nominal = design.levels(alpha, [t.look for t in at], None if any(v is None for v in variances)
                                        else [float(v) for v in variances])[-1]  # type: ignore[arg-type]
            nominal = max(nominal, _FLOOR)
            _sides[side].setdefault(i, nominal)
            return nominal

        before = {i: v for i, (v, _, _) in settled.items()}
        verdicts = decide_rules(gate, inp, gate_file, level=lambda i, a: level(i, a, 0), settled=before)
        if any(h and h[-1].look == j and h[-1].sides[0] != h[-1].sides[1] for h in history.values()):
            fails = decide_rules(gate, inp, gate_file, level=lambda i, a: level(i, a, 1), settled=before)
            verdicts = [_merge(p, f, history[i][-1].sides[0] if history[i] else True)
                        for i, (p, f) in enumerate(zip(verdicts, fails, strict=True))]
        else:
            sides[1].update(sides[0])
        levels_here = {i: _side_level(verdicts[i], sides[0][i], sides[1].get(i, sides[0][i])) for i in sides[0]}
        newly: dict[str, str] = {}
        names = [r.name for r in rule_results(gate, inp, verdicts)]
        for i, (rule, verdict) in enumerate(zip(gate.rules, verdicts, strict=True)):
            if i not in settled and settles(rule, verdict) and verdict.outcome != "SKIPPED":
                settled[i] = (verdict, j, levels_here.get(i, math.nan))
                newly[names[i]] = verdict.outcome
        stop = _stop(gate, verdicts, settled, last=j == len(design.looks) - 1)
        looks.append(Look(j, design.looks[j], overall(rule_results(gate, inp, verdicts)), newly,
                          {names[i]: v for i, v in levels_here.items()}, stop))
        if stop is not None:
            break
    if inp is None:
        raise ValueError("no complete look to evaluate")
    final = _final(gate, design, verdicts, settled, looks, finished=finished)
    return SequentialGate(rule_results(gate, inp, final), looks)


def _merge(passing: Verdict, failing: Verdict, pass_side_live: bool) -> Verdict:
    """One verdict from the PASS side's test and the FAIL side's, each run at its own level: a PASS of the
    first, else a FAIL of the second, else undecided. A FAIL of the PASS side's test (or a PASS of the FAIL
    side's) was tested at the other side's level: it does not count."""
    if passing.outcome == "PASS":
        return passing
    if failing.outcome == "FAIL":
        return failing
    for verdict in (passing, failing) if pass_side_live else (failing, passing):
        if verdict.outcome not in ("PASS", "FAIL"):
            return verdict
    return replace(passing, outcome="INCONCLUSIVE", reason=f"{passing.reason}; but neither bound crossed the bar at "
                   "its own side's level (PASS and FAIL spend α at different looks), so INCONCLUSIVE")


def _side_level(verdict: Verdict, passing: float, failing: float) -> float:
    """The level a look records for a rule: the deciding side's, else the higher (the side that can decide)."""
    if verdict.outcome == "PASS":
        return passing
    if verdict.outcome == "FAIL":
        return failing
    return max(passing, failing)


def _stop(gate: GateFile, verdicts: list[Verdict], settled: dict[int, tuple[Verdict, int, float]],
          *, last: bool) -> StopReason | None:
    if any(v.outcome == "FAIL" for v, _, _ in settled.values()):
        return "failed"
    if not any(holds_open(rule, v) for rule, v in zip(gate.rules, verdicts, strict=True)):
        return "decided"
    return "max_trials" if last else None


def _final(gate: GateFile, design: Sequential, verdicts: list[Verdict], settled: dict[int, tuple[Verdict, int, float]],
           looks: list[Look], *, finished: bool) -> list[Verdict]:
    """Each rule's verdict at the end: settled ones as they were settled, the rest as the last look saw them."""
    last = looks[-1]
    where = f"look {last.index + 1} of {len(design.looks)} ({last.trials} trial(s) per case)"
    out: list[Verdict] = []
    for i, (rule, verdict) in enumerate(zip(gate.rules, verdicts, strict=True)):
        info: dict[str, Any] = {"looks": len(looks), "trials_per_case": last.trials}
        if i in settled:
            v, j, nominal = settled[i]
            info.update({"decided_at_look": j + 1, "trials_at_decision": design.looks[j]})
            if math.isfinite(nominal):
                info["nominal_alpha"] = nominal
            reason = f"{v.reason} [decided at look {j + 1} of {len(design.looks)}, {design.looks[j]} trial(s) per case" + (
                f", tested at the look's nominal α = {nominal:.3g}]" if math.isfinite(nominal) else "]")
            out.append(replace(v, reason=reason, details={**v.details, "sequential": info}))
            continue
        outcome: Outcome = verdict.outcome
        if last.stop is None and not finished:
            note = f"not final: the sequential run is at {where} and has not decided; resume it"
            if outcome in ("PASS", "FAIL"):
                outcome = "INCONCLUSIVE"
        elif last.stop == "failed" and holds_open(rule, verdict):
            note = f"as seen at {where}, where the run stopped because a rule failed"
        elif holds_open(rule, verdict) and outcome == "INCONCLUSIVE":
            note = f"undecided at the last look, {where}"
        else:
            note = f"at {where}"
        out.append(replace(verdict, outcome=outcome, reason=f"{verdict.reason} [{note}]",
                           details={**verdict.details, "sequential": info}))
    return out


def look_block(design: Sequential, gate: SequentialGate, *, cases: int, trials_run: int,
               baseline: SequentialBaseline | None) -> SequentialRecord:
    """``manifest.sequential``: the design, every look, and (once stopped) where and why."""
    return SequentialRecord(design=design.record(), baseline=baseline, looks=[look.record() for look in gate.looks],
                            evaluated_at=datetime.now(UTC).isoformat(),
                            stopped=stop_record(design, gate, cases=cases, trials_run=trials_run))


def stop_record(design: Sequential, gate: SequentialGate, *, cases: int, trials_run: int) -> SequentialStop | None:
    """Where the run stopped, why, and what it saved against the fixed design (None while it goes on): the same
    record in the manifest, the summary and gate.json."""
    stopped = gate.stopped
    if stopped is None:
        return None
    fixed = cases * design.max_trials
    return SequentialStop(look=stopped.index + 1, trials_per_case=stopped.trials, reason=stopped.stop,
                          outcome=stopped.outcome, trials_run=trials_run, fixed_design_trials=fixed,
                          trials_saved=fixed - trials_run, confidence=design.confidence(stopped.index))





@dataclass(frozen=True)
class SequentialRun:
    """A sequential run gated at its looks: the run at its last look, the replay, the comparison."""

    run: LoadedRun
    """The run as it stood at the last look evaluated (what the rules' results describe)."""
    design: Sequential
    gate: SequentialGate
    matching: Matching | None
    trials_run: int
    """Records in trials.jsonl (graded and errors): what the run cost."""


def recorded_baseline(run_folder: Path, block: SequentialRecord, given: Path | None) -> Path | None:
    """The baseline a sequential run is gated against: the one its looks compared with, and only that one."""
    recorded = block.baseline
    where = str(Path(run_folder) / "manifest.json")
    if recorded is None:
        if given is not None:
            raise GateError(where, "sequential.baseline", "this sequential run decided its looks without a baseline "
                            "(its baseline rules were SKIPPED at every look); comparing it with one now would be "
                            "a look the design did not plan. Give --baseline to `passhat run --sequential`")
        return None
    folder = Path(given) if given is not None else Path(recorded.folder)
    if not (folder / "manifest.json").is_file():
        raise GateError(where, "sequential.baseline", f"the baseline this sequential run compared with at its looks, "
                        f"{recorded.folder}, is not there; pass --baseline with that run's folder")
    from passhat.gate.ledger import trials_size

    if trials_size(folder) != recorded.trials_bytes:
        raise GateError(where, "sequential.baseline", f"{folder} is not the baseline this sequential run compared "
                        f"with at its looks ({recorded.folder}, trials.jsonl of {recorded.trials_bytes} bytes; this "
                        f"one has {trials_size(folder)}): a sequential run is gated against its own baseline")
    return folder


def gate_sequential_run(run_folder: Path, manifest: Manifest, gate: GateFile, gate_dir: Path, gate_file: str,
                        baseline: LoadedRun | None, *, allow_changed_cases: bool) -> SequentialRun:
    """Replay ``gate`` over the complete looks of the sequential run in ``run_folder``."""
    from passhat.compare import match_cases
    from passhat.results.tally import tally_records
    from passhat.runner.store import TRIALS

    assert manifest.sequential is not None
    design = Sequential.from_record(manifest.sequential.design)
    records = list(tally_records(Path(run_folder) / TRIALS))
    ids = list(manifest.suite.cases)
    done = complete_looks(records, ids, design)
    if done == 0:
        raise GateError(str(Path(run_folder) / "manifest.json"), "sequential", (
            f"no look of this sequential run is complete yet: its first look is at {design.looks[0]} trial(s) per "
            f"case, and {len(records)} of {design.looks[0] * len(ids)} are recorded; resume it"))
    views = look_runs(run_folder, manifest, records, design, done)
    matching = match_cases(baseline, views[-1], allow_changed_cases=allow_changed_cases) if baseline else None
    finished = manifest.status == "complete"
    result = evaluate_looks(gate, design, views, baseline, matching, gate_dir, gate_file, finished=finished)
    return SequentialRun(views[len(result.looks) - 1], design, result, matching, len(records))


__all__ = ["INFERENCES", "OPEN_ENDED", "Look", "SequentialGate", "StopReason", "complete_looks", "evaluate_looks",
           "gate_sequential_run", "look_block", "look_runs", "recorded_baseline", "stop_record"]
