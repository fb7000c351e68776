"""Regression cases from failures: a failed trial becomes a case that keeps failing until it is fixed.

The new case reproduces the failing conditions — same domain, fixture, faults, user spec, limits and
rules, and the assertions (the failed one among them) — and is tagged ``split: regression`` with the
failure's category and evidence in its description, in the same family (``group``) as the original
so it never leaks across dev and holdout.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from passhat.cases import Case
from passhat.cases.load import check_references, parse_case
from passhat.errors import PasshatError
from passhat.runner.records import TrialRecord
from passhat.runner.store import RunStore
from passhat.suites.locate import locate_suite
from passhat.validation import dump_yaml


def _pickable(store: RunStore, case_id: str) -> str:
    """For a trial that is not there or did not fail: the failed trials there are, to pick from."""
    failed: dict[str, list[int]] = {}
    for r in store.iter_records():
        if r.outcome == "fail":
            failed.setdefault(r.case_id, []).append(r.trial)
    if case_id in failed:
        return f"; failed trials of {case_id!r}: {', '.join(map(str, sorted(failed[case_id])))}"
    if failed:
        shown = sorted(failed)[:20]
        more = f" and {len(failed) - len(shown)} more" if len(failed) > len(shown) else ""
        return f"; cases with failed trials: {', '.join(shown)}{more}"
    return "; no trial of this run failed"


def find_trial(store: RunStore, case_id: str, trial: int) -> TrialRecord:
    """The recorded trial, or a clear error naming the failed trials that can be picked instead."""
    for record in store.iter_records():
        if record.case_id == case_id and record.trial == trial:
            return record
    raise PasshatError(f"{store.folder}: no trial {trial} of case {case_id!r} in trials.jsonl{_pickable(store, case_id)}")


def _domain_ref(case: Case, suite_folder: Path, out_folder: Path) -> str:
    ref = case.domain
    target = ref.partition(":")[0]
    candidate = suite_folder / target
    if target.endswith(".py") or candidate.is_dir():
        return os.path.relpath(candidate.resolve(), out_folder.resolve()) + (ref[len(target):] or "")
    return ref


def regression_case(run: Path, case_id: str, trial: int, out_file: Path, suite_ref: str | None = None) -> dict[str, Any]:
    """Build (and check) the regression case for one failed trial; returns it as data."""
    store = RunStore(run)
    manifest = store.manifest()  # "not a run folder" before "no such trial"
    record = find_trial(store, case_id, trial)
    if record.outcome != "fail":
        raise PasshatError(f"trial {trial} of {case_id!r} ended {record.outcome!r}; only failed trials make "
                           f"regression cases{_pickable(store, case_id)}")
    suite = locate_suite(manifest, Path(run), suite_ref)
    try:
        case = suite.case(case_id)
    except KeyError:
        raise PasshatError(f"case {case_id!r} is no longer in suite {suite.folder}") from None
    recorded = manifest.suite.cases.get(case_id)
    if suite_ref is None and recorded is not None and case.content_hash() != recorded:
        raise PasshatError(f"case {case_id!r} in {suite.files[case_id]} changed since run {run} (case hash "
                           f"{recorded[:12]} then, {case.content_hash()[:12]} now): a regression case made from it "
                           "would not reproduce this failure; pass --suite PATH to make it from today's case anyway")
    data: dict[str, Any] = case.model_dump(mode="json", exclude_defaults=True)
    # the file form of an assertion is a single-key mapping ({row_count: {...}}), which also keeps `kind`
    data["assertions"] = [{a.kind: a.model_dump(mode="json", exclude_defaults=True, exclude={"kind"})}
                          for a in case.assertions]
    failure = record.failure
    where = f" at step {failure.step}" if failure and failure.step else ""
    cause = f"{failure.category}{where}: {failure.evidence}" if failure else "failed"
    data.update(
        id=f"{case.id}-regression-t{trial}",
        domain=_domain_ref(case, suite.folder, out_file.parent),
        split="regression",
        group=case.group or case.id,
        tags={**case.tags, "source": "failure", **({"failure": failure.category} if failure else {})},
        description=(f"Regression from run {run.name} ({manifest.agent}), trial {trial} of {case.id}: {cause}"
                     + (f"\n\nOriginal case: {case.description}" if case.description else "")),
    )
    if recorded != case.content_hash():
        data["description"] += "\n\nNote: the case changed since that run; this copy uses the current version."
    checked = parse_case(data, str(out_file))
    check_references(checked, str(out_file), suite.domain_of(case))
    return data


def refuse_existing(out_file: Path) -> None:
    """Never overwrite a case file: it may hold edits (``cases import`` refuses the same way)."""
    if out_file.exists() or out_file.is_symlink():
        raise PasshatError(f"{out_file} already exists (from an earlier from-failure?); "
                           "give --out a new file or remove it")


def write_regression_case(data: dict[str, Any], out_file: Path) -> None:
    """Write the case file whole (a temporary file renamed into place), never over an existing file."""
    refuse_existing(out_file)
    out_file.parent.mkdir(parents=True, exist_ok=True)
    text = "# Generated by `passhat cases from-failure`; edit freely.\n" + dump_yaml(
        data, sort_keys=False, allow_unicode=True, width=110)
    tmp = out_file.with_suffix(out_file.suffix + ".tmp")
    tmp.write_text(text, "utf-8")
    tmp.replace(out_file)
