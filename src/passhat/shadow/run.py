"""``shadow(traces, agent, domain=...)``: replay production conversations with a candidate and compare.

In order: read and check every conversation against the domain (nothing is written before all of it is
valid), claim the shadow folder, write what was read — redacted — as ``conversations.jsonl`` and one case
per conversation in ``cases/``, run them with the candidate through :func:`passhat.evaluate` (so every
agent kind works) into ``run/`` with production's reads served from the recording, and write
``shadow.json``. See docs/shadow.md.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from passhat.agents import check_agent_spec
from passhat.api import AgentLike, Progress, Run, evaluate
from passhat.api.evaluation import build_redactor, default_out
from passhat.cases.load import parse_case
from passhat.domain import BUILTIN_DOMAINS, Domain, load_domain
from passhat.errors import EXIT_FAILED, EXIT_INCOMPLETE, EXIT_OK, PasshatError
from passhat.models.files import write_text_atomic
from passhat.models.shadow import ShadowReport, TraceFile
from passhat.redaction import Redactor
from passhat.runner.health import DEFAULT_MAX_ERROR_RATE
from passhat.runner.records import TrialRecord
from passhat.shadow.cases import case_ids, check_conversation, recorded_reads, shadow_case
from passhat.shadow.replay import RecordedReads
from passhat.shadow.report import conversation_result, shares
from passhat.shadow.traces import Recorded, read_traces
from passhat.validation import dump_yaml

CONVERSATIONS = "conversations.jsonl"
SHADOW_JSON = "shadow.json"
HEADER = "# Written by `passhat shadow` from {where} (redacted); the candidate replays this conversation.\n"


@dataclass(frozen=True)
class ShadowRun:
    """A finished shadow run: its folder, the report (``shadow.json``) and the run of the candidate."""

    folder: Path
    report: ShadowReport
    run: Run
    incomplete: str | None
    """Why the run did not measure the candidate (too many infrastructure errors), or None."""


def resolve_domain(ref: str) -> tuple[Domain, str]:
    """The domain and its reference with a file path made absolute (case files elsewhere can point at it)."""
    target, sep, attr = ref.partition(":")
    path = Path(target)
    if ref in BUILTIN_DOMAINS or not (path.suffix == ".py" or path.is_dir()):
        return load_domain(ref), ref
    absolute = str(path.resolve()) + sep + attr
    return load_domain(absolute), absolute


def domain_ref_from(ref: str, folder: Path) -> str:
    """``ref`` (from :func:`resolve_domain`) as a case file in ``folder`` writes it: a path relative to the folder."""
    target, sep, attr = ref.partition(":")
    if not Path(target).is_absolute():
        return ref
    return os.path.relpath(target, folder.resolve()) + sep + attr


def read_conversations(traces: Sequence[Path], domain: Domain, fixture: str,
                       redactor: Redactor) -> tuple[list[Recorded], list[TraceFile]]:
    """Every conversation of ``traces``, redacted and checked against the domain, and what each file held (bad
    input raises PasshatError)."""
    if fixture not in domain.fixtures:
        raise PasshatError(f"--fixture {fixture!r}: domain {domain.name!r} has: {', '.join(sorted(domain.fixtures))}")
    recorded, files = read_traces(traces, redactor)
    for rec in recorded:
        check_conversation(rec, domain)
    return recorded, [TraceFile(path=str(path), sha256=digest, conversations=n)
                      for path, (digest, n) in zip(traces, files, strict=True)]


def _claim(out: Path | None, domain: str, agent: str) -> tuple[Path, bool]:
    """The shadow folder, new or empty, and whether this call created it."""
    if out is None:
        return default_out(f"shadow-{domain}", agent), True
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise PasshatError(f"--out {out}: not an empty folder; choose a new one (a shadow run is written whole)")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    return out, created


def _discard(folder: Path, created: bool) -> None:
    """Remove what a shadow run wrote before its run could start (an agent that does not load, a bad option)."""
    for name in (CONVERSATIONS, "cases", "run"):
        path = folder / name
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
    if created and not any(folder.iterdir()):
        folder.rmdir()


def _write_inputs(folder: Path, recorded: list[Recorded], ids: list[str], domain: Domain, domain_ref: str,
                  fixture: str, max_seconds: float | None) -> None:
    write_text_atomic(folder / CONVERSATIONS, "".join(
        rec.conversation.model_dump_json(exclude_none=True) + "\n" for rec in recorded))
    cases = folder / "cases"
    cases.mkdir()
    ref = domain_ref_from(domain_ref, cases)
    for rec, cid in zip(recorded, ids, strict=True):
        data = shadow_case(rec, cid, ref, fixture, domain, max_seconds)
        parse_case(data, f"{cases / cid}.yaml")  # built valid; checked all the same
        body = dump_yaml(data, sort_keys=False, allow_unicode=True, width=110)
        (cases / f"{cid}.yaml").write_text(HEADER.format(where=rec.where) + body, "utf-8")


def shadow(
    traces: Sequence[str | Path], agent: AgentLike, *, domain: str, fixture: str = "default", trials: int = 1,
    concurrency: int = 4, seed: int = 0, out: str | Path | None = None, redact: bool = True,
    redact_fields: Sequence[str] = (), redact_patterns: Mapping[str, str] | None = None,
    isolate: Literal["none", "process"] = "none", name: str | None = None, max_seconds: float | None = None,
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE, confidence: float = 0.95, replies: bool = True,
    progress: Callable[[Progress], None] | None = None, on_warning: Callable[[str], None] | None = None,
    **model_options: Any,
) -> ShadowRun:
    """Replay every conversation of ``traces`` with ``agent`` in ``domain``'s sandbox and compare with production.

    ``replies=False`` compares the final replies but does not count a difference as a divergence.
    ``max_seconds``: the candidate's time budget per conversation (default: a case's, 60 s). Everything read
    is redacted by one redactor with a placeholder per distinct value (``[REDACTED:email:1]``), which also
    redacts the candidate's run records, so a placeholder means the same value in both. ``model_options`` are
    :func:`passhat.evaluate`'s (``base_url``, ``temperature``, ``retries``…). Bad input raises
    :class:`PasshatError` before anything is written.
    """
    if max_seconds is not None and not max_seconds > 0:
        raise PasshatError(f"max_seconds must be > 0, got {max_seconds}")
    loaded, domain_ref = resolve_domain(domain)
    paths = [Path(t) for t in traces]
    redactor = build_redactor(redact, redact_fields, redact_patterns, numbered=True)
    recorded, files = read_conversations(paths, loaded, fixture, redactor)
    ids = case_ids(recorded)
    label: str = agent if isinstance(agent, str) else name or str(getattr(agent, "__name__", "agent"))
    if isinstance(agent, str):
        check_agent_spec(agent, isolate)
    folder, created = _claim(None if out is None else Path(out), loaded.name, label)
    _write_inputs(folder, recorded, ids, loaded, domain_ref, fixture, max_seconds)
    reads = RecordedReads.of(folder / CONVERSATIONS, {cid: recorded_reads(rec, loaded)
                                                      for rec, cid in zip(recorded, ids, strict=True)})
    try:
        run = evaluate(folder / "cases", agent, trials=trials, concurrency=concurrency, seed=seed, out=folder / "run",
                       sanity=False, redactor=redactor, isolate=isolate, name=name, cassette=reads, progress=progress,
                       on_warning=on_warning, **model_options)
    except PasshatError:
        if not (folder / "run" / "trials.jsonl").exists():  # refused before the first trial: leave nothing behind
            _discard(folder, created)
        raise
    by_case: dict[str, list[TrialRecord]] = {cid: [] for cid in ids}
    for record in run.records():
        by_case[record.case_id].append(record)
    results = [conversation_result(rec, cid, loaded, by_case[cid], reads.counts, replies)
               for rec, cid in zip(recorded, ids, strict=True)]
    incomplete = run.incomplete(max_error_rate)
    if incomplete is None and all(c.status == "unmeasured" for c in results):  # whatever --max-error-rate allows
        incomplete = "no conversation could be compared: every trial ended in an infrastructure error"
    code = EXIT_FAILED if any(c.status == "diverges" for c in results) else EXIT_INCOMPLETE if incomplete else EXIT_OK
    report = ShadowReport(
        agent=label, domain=loaded.name, domain_ref=domain_ref, fixture=fixture, trials=trials, seed=seed,
        traces=[str(p) for p in paths], trace_files=files, max_seconds=max_seconds, redaction=redactor.describe(),
        run=str(folder / "run"), confidence=confidence, replies_counted=replies, conversations=results,
        shares=shares(results, confidence),
        unmeasured=sum(1 for c in results if c.status == "unmeasured"), exit_code=code,
    )
    report.dump(folder / SHADOW_JSON)
    return ShadowRun(folder, report, run, incomplete)
