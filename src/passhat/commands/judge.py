"""``passhat judge`` (re-judge a recorded run, N times for test-retest) and ``passhat pairwise``.

Both work from a run folder's records, so a judge can be recalibrated or swapped without re-running
the agents: the judge sees what it would have seen live (messages, tool calls, changed rows, policy).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import yaml
from rich.markup import escape

from passhat.calibrate.inputs import judgments_from_grades
from passhat.cases import load_suite
from passhat.cases.rubric import JudgeSpec
from passhat.cases.suite import Suite
from passhat.commands.common import FiniteFloat
from passhat.console import stderr_console
from passhat.errors import PasshatError
from passhat.graders.judge import Judge, PairwiseVerdict, pairwise_summary
from passhat.graders.judge_prompt import Evidence
from passhat.llm import RetryPolicy, chat_model, load_price_table
from passhat.models import Manifest
from passhat.models.finite import dumps_strict
from passhat.runner.records import TrialRecord
from passhat.runner.store import RunStore
from passhat.seeding import derive_seed
from passhat.validation import load_yaml

T = TypeVar("T")


def judge_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--judge", "judge_spec", required=True, help="openai:MODEL or anthropic:MODEL"),
        click.option("--base-url", default=None, help="Endpoint of the judge model."),
        click.option("--prices", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
                     help="YAML/JSON price table extending the built-in one (USD per million tokens)."),
        click.option("--retries", type=click.IntRange(1), default=6, show_default=True,
                     help="Attempts per model call on 429/5xx before the trial's judgment is an error."),
        click.option("--retry-delay", type=FiniteFloat(0), default=1.0, show_default=True,
                     help="First backoff delay in seconds (doubles per retry)."),
        click.option("-j", "--concurrency", type=click.IntRange(1), default=4, show_default=True,
                     help="Judge calls in flight at once."),
        click.option("--out", type=click.Path(path_type=Path, dir_okay=False), required=True, help="JSONL to write."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _judge(judge_spec: str, base_url: str | None, prices: Path | None, retries: int, retry_delay: float) -> Judge:
    retry = RetryPolicy(attempts=retries, base_delay_s=retry_delay, max_delay_s=max(retry_delay, 30.0))
    return Judge(chat_model(judge_spec, base_url=base_url, retry=retry), prices=load_price_table(prices))


def _suite(run: Path) -> tuple[Suite, list[TrialRecord], Manifest]:
    store = RunStore(run)
    manifest = store.manifest()
    if manifest.suite.folder is None:
        raise PasshatError(f"{run}: its manifest does not say where the suite's case files were read from")
    suite = load_suite(manifest.suite.folder)
    if suite.content_hash() != manifest.suite.hash:
        stderr_console().print(f"[yellow]warning:[/yellow] the suite of {escape(str(run))} changed since the run; "
                               "judging with the current rubrics", highlight=False)
    return suite, [r for r in store.iter_records() if r.outcome != "error"], manifest


def _evidence(suite: Suite, r: TrialRecord) -> Evidence:
    case = suite.case(r.case_id)
    return Evidence(messages=r.messages, calls=r.calls, changes=r.diff, policy=suite.domain_of(case).policy)


async def _bounded(jobs: list[Callable[[], Awaitable[T]]], concurrency: int) -> list[T]:
    gate = asyncio.Semaphore(concurrency)

    async def one(job: Callable[[], Awaitable[T]]) -> T:
        async with gate:
            return await job()

    return list(await asyncio.gather(*(one(j) for j in jobs)))


@click.command("judge")
@click.argument("run_folder", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--repeats", type=click.IntRange(1), default=1, show_default=True,
              help="Judge each trial this many times with the same pinned settings (test-retest).")
@judge_options
def judge_command(run_folder: Path, repeats: int, judge_spec: str, base_url: str | None, prices: Path | None,
                  retries: int, retry_delay: float, concurrency: int, out: Path) -> None:
    """Judge the recorded trials of RUN_FOLDER whose cases have a judge: section; write judgments JSONL."""
    try:
        judge = _judge(judge_spec, base_url, prices, retries, retry_delay)
        suite, records, _ = _suite(run_folder)
    except (ValueError, KeyError) as exc:  # a malformed --judge spec or price table, a manifest without a suite
        raise PasshatError(str(exc)) from exc
    ids = {c.id for c in suite.cases}  # once, not per record
    todo = [(r, rep) for r in records if r.case_id in ids and suite.case(r.case_id).judge for rep in range(repeats)]
    if not todo:
        raise PasshatError(f"{run_folder}: nothing to judge — no graded trial of this run is of a case with a judge: "
                        "section (see docs/llm.md)")

    def job(r: TrialRecord, rep: int) -> Callable[[], Awaitable[Any]]:
        rubric = suite.case(r.case_id).judge
        assert rubric is not None
        return lambda: judge.judge(rubric, _evidence(suite, r), derive_seed("judge", r.seed))

    results = asyncio.run(_bounded([job(r, rep) for r, rep in todo], concurrency))
    info = judge.describe()
    cost = 0.0
    with out.open("w", encoding="utf-8") as fh:
        for (r, rep), judged in zip(todo, results, strict=True):
            cost += judged.usage.cost
            for j in judgments_from_grades(r.case_id, r.trial, judged.grades, repeat=rep):
                fh.write(dumps_strict({**j.to_json(), "judge": info}, str(out), ensure_ascii=False) + "\n")
    stderr_console().print(escape(f"judged {len(todo)} trial(s) ({repeats} repeat(s)) · judge cost {cost:.4f} → {out}"),
                           highlight=False)


@click.command("pairwise")
@click.argument("run_a", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.argument("run_b", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option("--rubric", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
              help="YAML judge: section to use for every case (default: each case's own).")
@judge_options
def pairwise_command(run_a: Path, run_b: Path, rubric: Path | None, judge_spec: str, base_url: str | None,
                     prices: Path | None, retries: int, retry_delay: float, concurrency: int, out: Path) -> None:
    """Compare the replies of RUN_A and RUN_B trial by trial, each pair judged in both orders (a verdict
    that flips with the order is a tie); agent and model names are masked."""
    try:
        judge = _judge(judge_spec, base_url, prices, retries, retry_delay)
        suite, records_a, manifest_a = _suite(run_a)
        _, records_b, manifest_b = _suite(run_b)
        shared = JudgeSpec.model_validate(load_yaml(rubric.read_text("utf-8"))) if rubric else None
    except yaml.YAMLError as exc:
        raise PasshatError(f"{rubric}: not valid YAML: {exc}") from exc
    except (ValueError, KeyError) as exc:
        raise PasshatError(str(exc)) from exc
    mask = tuple(_names(manifest_a) | _names(manifest_b))
    by_key = {r.key: r for r in records_b}
    ids = {c.id for c in suite.cases}  # once, not per record
    pairs = []
    for a in records_a:
        b = by_key.get(a.key)
        case_rubric = shared or (suite.case(a.case_id).judge if a.case_id in ids else None)
        if b is not None and case_rubric is not None:
            pairs.append((a, b, case_rubric))
    if not pairs:
        raise PasshatError(f"nothing to compare: no graded trial of {run_a} has a graded trial of the same case and number "
                        f"in {run_b} with a judge rubric (runs of one suite, whose cases have a judge: section, or pass "
                        "--rubric)")

    def job(a: TrialRecord, b: TrialRecord, spec: JudgeSpec) -> Callable[[], Awaitable[PairwiseVerdict]]:
        return lambda: judge.compare(spec, _evidence(suite, a), _evidence(suite, b), derive_seed("pairwise", a.seed), mask)

    verdicts = asyncio.run(_bounded([job(a, b, s) for a, b, s in pairs], concurrency))
    with out.open("w", encoding="utf-8") as fh:
        for (a, _, _), v in zip(pairs, verdicts, strict=True):
            fh.write(dumps_strict({"case_id": a.case_id, "trial": a.trial, "winner": v.winner, "first_order": v.first_order,
                                 "second_order": v.second_order, "swap_consistent": v.swap_consistent,
                                 "cost": v.usage.cost}, str(out)) + "\n")
    click.echo(dumps_strict({"run_a": str(run_a), "run_b": str(run_b), **pairwise_summary(verdicts)}, "the pairwise summary",
                            indent=2))


def _names(manifest: Manifest) -> set[str]:
    """Agent and model names to hide from the judge (brand bias)."""
    names = {manifest.agent}
    agent = manifest.models.agent
    if agent is not None:
        names |= {agent.model or "", agent.spec or ""}
    return {n for n in names if len(n) >= 3}
