"""``passhat cases expected SUITE CASE_ID``: the final state a case's reference solution produces.

Printed as the row changes it makes to the fixture, table by table — what ``expect_state: reference``
compares a trial's changes with.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

import click

from passhat.errors import PasshatError
from passhat.world import Diff
from passhat.world.diff import RowChange


def _values(row: dict[str, Any], columns: list[str]) -> str:
    return ", ".join(f"{c}={row[c]!r}" for c in columns)


def describe_change(ch: RowChange) -> str:
    """One row change on one line: inserted rows with every value, updates as old → new."""
    if ch.after is None:
        return f"deleted {list(ch.key)}"
    if ch.before is None:
        return f"inserted {list(ch.key)}: {_values(ch.after, list(ch.after))}"
    before, after = ch.before, ch.after
    return f"updated {list(ch.key)}: " + ", ".join(f"{c} {before[c]!r} → {after[c]!r}" for c in ch.changed_fields)


def describe_expected(diff: Diff) -> list[str]:
    """The reference's row changes, table by table."""
    if not len(diff):
        return ["no row changes: the expected final state is the fixture itself"]
    lines = []
    for table in diff.tables:
        rows = diff.rows(table)
        lines.append(f"{table} ({len(rows)} change(s))")
        lines += [f"  {describe_change(ch)}" for ch in rows]
    return lines


@click.command("expected")
@click.argument("suite")
@click.argument("case_id")
@click.option("--json", "json_out", is_flag=True, help="Print the row changes as JSON (the trial record's `diff` shape).")
def expected_command(suite: str, case_id: str, json_out: bool) -> None:
    """Print the expected final state CASE_ID's `reference:` calls produce: their row changes, table by table."""
    from passhat.cases import load_suite
    from passhat.cases.expected import expected_state

    loaded = load_suite(suite)  # runs (and checks) every case's reference
    ids = [c.id for c in loaded.cases]
    if case_id not in ids:
        close = difflib.get_close_matches(case_id, ids, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise PasshatError(f"{suite}: no case {case_id!r}{hint}; cases: {', '.join(ids)}")
    case = loaded.case(case_id)
    diff = expected_state(case, loaded.domain_of(case))
    if diff is None:
        raise PasshatError(f"{loaded.files[case_id]}: reference: case {case_id!r} has no reference solution; add "
                        "`reference: [{tool: NAME, args: {...}}]` to compute its expected state")
    if json_out:
        click.echo(json.dumps(diff.to_json(), indent=2, ensure_ascii=False))
        return
    who = f" as {case.user.identity}" if case.user.identity else ""
    click.echo(f"{case_id}: {len(case.reference)} reference call(s) on fixture {case.fixture!r}{who}")
    for line in describe_expected(diff):
        click.echo(line)
    click.echo("(generated ids and timestamps differ in trials; expect_state matches inserted rows by their other columns)")
