"""``passhat regrade``: a stored run re-graded with today's cases and graders, into a new run folder.

τ² fixed 75+ tasks after publishing and re-graded stored trajectories to recover comparable scores.
Here the source run is never modified: the new folder's manifest is the source's with the *current*
suite block (case hashes of the cases re-graded) and a ``regrade`` block naming the source run, which
cases changed, which are missing from the suite now (their trials are skipped and counted), and the
graders used. The agent named in the manifest is never loaded.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from passhat import __version__
from passhat.cases import Suite
from passhat.errors import RunError
from passhat.graders import DEFAULT_GRADERS, Grader
from passhat.models import Manifest, OutcomeChange, RegradeInfo
from passhat.redaction import DEFAULT_PATTERNS, Redactor
from passhat.regrade.record import regrade_record
from passhat.results import build_summary
from passhat.runner.store import RunStore
from passhat.suites.changes import changed_cases
from passhat.suites.locate import locate_suite, suite_location
from passhat.suites.select import subset
from passhat.suites.snapshot import suite_block


def suite_for(manifest: Manifest, ref: str | None, source: Path = Path(".")) -> Suite:
    """``--suite`` if given, else the run's suite where the manifest says it is (``suites.locate``)."""
    return locate_suite(manifest, source, ref)


def _redactor(manifest: Manifest) -> Redactor:
    """The source run's redaction (grade reasons of the rebuilt state may quote fixture values)."""
    info = manifest.redaction
    if info is None:
        return Redactor(enabled=False)
    patterns = {n: DEFAULT_PATTERNS[n] for n in info.patterns if n in DEFAULT_PATTERNS}
    return Redactor(patterns=patterns, fields=set(info.fields), enabled=info.enabled)


def regrade_run(source: Path, out: Path, suite: Suite | None = None, *, suite_ref: str | None = None,
                graders: tuple[Grader, ...] = DEFAULT_GRADERS) -> RegradeInfo:
    """Re-grade every trial of ``source`` into ``out``; returns what changed (also in the manifest)."""
    src = RunStore(Path(source))
    manifest = src.manifest()
    if Path(out).resolve() == Path(source).resolve():
        raise RunError(f"--out {out} is the source run; a re-grade writes a new run folder")
    redactor = _redactor(manifest)
    dst = RunStore(Path(out), redactor)
    if dst.trials_path.exists() and any(dst.iter_records()):
        raise RunError(f"{out} already holds a run; choose another --out")
    current = suite if suite is not None else suite_for(manifest, suite_ref, Path(source))
    source_cases = manifest.suite.cases
    known = {c.id for c in current.cases}
    present = [cid for cid in source_cases if cid in known]
    missing = [cid for cid in source_cases if cid not in known]
    if not present:
        raise RunError(f"no case of {source} is in suite {current.folder} (run cases: {', '.join(list(source_cases)[:5])}"
                       f"{' …' if len(source_cases) > 5 else ''}); nothing to re-grade")
    regraded = subset(current, present)
    block = suite_block(regraded).model_copy(update=suite_location(current.folder, Path(out)))
    changes = changed_cases(manifest.suite, block)
    comparable = set(changes.unchanged)
    report = RegradeInfo(
        source=str(source), source_suite_hash=manifest.suite.hash,
        source_case_hashes={cid: source_cases[cid] for cid in present},
        changed_cases=changes.changed, domains_changed=changes.domains_changed,
        missing_cases=missing, skipped_trials=0, graders=[getattr(g, "__name__", repr(g)) for g in graders],
        custom_graders={name: {g.name: g.kind for g in d.graders.values()}
                        for name, d in sorted(current.domains.items()) if d.graders},
        judge_grades="carried over from the source run (not re-judged), custom judge graders' too",
        passhat_version=__version__, regraded_at=datetime.now(UTC).isoformat(), trials=0, outcome_changes=[],
    )
    new_manifest = manifest.model_copy(update={"suite": block, "regrade": report, "status": "running"})
    dst.write_manifest(new_manifest)
    dst.open_for_append()
    try:
        for record in src.iter_records():
            if record.case_id not in known:
                report.skipped_trials += 1
                continue
            case = current.case(record.case_id)
            new = regrade_record(record, case, current.domain_of(case), graders, redactor, record.case_id in comparable)
            report.trials += 1
            if new.outcome != record.outcome:
                report.outcome_changes.append(
                    OutcomeChange(case_id=record.case_id, trial=record.trial, before=record.outcome, after=new.outcome))
            dst.append(new)
    finally:
        dst.close()
    new_manifest.status, new_manifest.finished_at = "complete", datetime.now(UTC).isoformat()
    dst.write_manifest(new_manifest)
    dst.write_summary(build_summary(dst.iter_records(), new_manifest))
    return report
