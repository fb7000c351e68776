"""Two run folders as paired evidence: which cases may be compared, and which may not (and why).

Two runs measured the same thing only when their suite content hashes are equal. When they are not,
a case is still comparable if its own content hash is unchanged in both manifests and the domain it
runs against has the same hash in both; every other case is excluded with a reason, never silently
dropped.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from passhat.errors import PasshatError, RunError
from passhat.models import CaseMeta, Manifest, RunRef, SuiteInfo
from passhat.results.tally import CaseTally, tally
from passhat.runner.store import TRIALS, RunStore
from passhat.suites.changes import changed_cases, describe_changes


class CompareError(PasshatError):
    """Two runs cannot be compared (different suites, nothing in common, unreadable folder)."""


@dataclass(frozen=True)
class LoadedRun:
    """A run folder's manifest and per-case tallies (no trial bodies are kept in memory)."""

    folder: Path
    manifest: Manifest
    tallies: dict[str, CaseTally]

    @property
    def suite(self) -> SuiteInfo:
        return self.manifest.suite

    @property
    def seed(self) -> int:
        return self.manifest.seed

    def meta(self, case_id: str) -> CaseMeta:
        """Tags, group, split and domain of a case as recorded in the manifest."""
        return self.manifest.case_meta(case_id)

    def describe(self) -> RunRef:
        return RunRef(folder=str(self.folder), agent=self.manifest.agent, suite=self.suite.name,
                      suite_hash=self.suite.hash, trials=self.manifest.trials, seed=self.manifest.seed,
                      status=self.manifest.status)


def load_run(folder: Path) -> LoadedRun:
    """Read a run folder; a folder without a usable manifest is bad input."""
    store = RunStore(Path(folder))
    try:
        manifest = store.manifest()
    except RunError as exc:
        raise CompareError(str(exc)) from None
    return LoadedRun(Path(folder), manifest, tally(store.iter_records(), manifest.suite.cases))


def require_trials(run: LoadedRun, role: str) -> LoadedRun:
    """``run`` when it has at least one recorded trial; else bad input naming its ``trials.jsonl``.

    A finished run always has records, so none means the file was lost (an artifact upload that left the
    large file out), emptied, or the run had not finished a trial yet. Compared as it was, a base of no
    trials gave "no significant new failures" and a gate's ``no_new_failures`` PASS: no evidence read as
    good news. ``role`` names the run in the message (``base``, ``--baseline``).
    """
    if any(t.n or t.errors for t in run.tallies.values()):
        return run
    path = run.folder / TRIALS
    state = "holds no trial record" if path.exists() else "is missing"
    raise CompareError(f"{path}: {state}; the {role} run has no recorded trial to compare with")


@dataclass(frozen=True)
class Excluded:
    """A case left out of a comparison, and why."""

    case_id: str
    reason: str


@dataclass(frozen=True)
class Matching:
    """The cases two runs can be compared on, in the candidate's order."""

    case_ids: list[str]
    excluded: list[Excluded]
    same_suite: bool


def match_cases(base: LoadedRun, cand: LoadedRun, *, allow_changed_cases: bool) -> Matching:
    """Cases both runs measured identically; refuses different suites unless ``allow_changed_cases``."""
    b_cases, c_cases = base.suite.cases, cand.suite.cases
    if base.suite.hash == cand.suite.hash:
        return Matching([cid for cid in c_cases if cid in b_cases], [], True)
    if not allow_changed_cases:
        what = describe_changes(changed_cases(base.suite, cand.suite)) or "the suite hashes differ"
        raise CompareError(
            f"{base.folder} and {cand.folder} ran different suites (hash {base.suite.hash[:12]} vs "
            f"{cand.suite.hash[:12]}): {what}. Their scores measure different things; "
            "pass --allow-changed-cases to compare only the cases whose content is unchanged")
    changed_domains = _changed_domains(base, cand)
    kept: list[str] = []
    excluded: list[Excluded] = []
    for cid in [*c_cases, *(c for c in b_cases if c not in c_cases)]:
        reason = _exclusion(cid, b_cases, c_cases, cand.meta(cid).domain, changed_domains)
        if reason:
            excluded.append(Excluded(cid, reason))
        else:
            kept.append(cid)
    if not kept:
        raise CompareError(f"no case of {cand.folder} is unchanged in {base.folder}: nothing to compare "
                           f"({len(excluded)} case(s) excluded)")
    return Matching(kept, excluded, False)


def _changed_domains(base: LoadedRun, cand: LoadedRun) -> set[str]:
    b, c = base.suite.domains, cand.suite.domains
    return {name for name in set(b) | set(c) if b.get(name) != c.get(name)}


def _exclusion(cid: str, b_cases: dict[str, str], c_cases: dict[str, str], domain: str | None,
               changed_domains: set[str]) -> str | None:
    if cid not in c_cases:
        return "only in the base run"
    if cid not in b_cases:
        return "only in the candidate run"
    if b_cases[cid] != c_cases[cid]:
        return "case content changed"
    if domain is not None and domain in changed_domains:
        return f"domain {domain!r} changed"
    if domain is None and changed_domains:
        # Older manifests do not say which domain a case uses: any domain change may affect it.
        return f"domain(s) {', '.join(sorted(changed_domains))} changed (the manifest does not map cases to domains)"
    return None
