"""A malformed case is rejected before any trial runs, naming the file, the field and what is valid."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from passhat.cases import load_suite
from passhat.cli import main
from passhat.errors import CaseError

NOTES = Path(__file__).parents[1] / "data" / "notes"
GOOD = (NOTES / "cases" / "add-note.yaml").read_text()


def suite_with(tmp_path: Path, text: str, name: str = "bad.yaml") -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    shutil.copy(NOTES / "domain.py", tmp_path / "domain.py")
    shutil.copy(NOTES / "fixture.yaml", tmp_path / "fixture.yaml")
    (folder / name).write_text(text)
    return folder


@pytest.mark.parametrize(
    ("text", "field", "words"),
    [
        ("id: x\n  bad: [", "line", "invalid YAML"),
        (GOOD + "colour: blue\n", "colour", "unknown field; valid fields: id, domain"),
        (GOOD.replace("required_tools: [add_note]", "required_tools: [launch_rocket]"),
         "required_tools.0.tool", "unknown tool 'launch_rocket'"),
        (GOOD.replace("table: notes, where: {owner", "table: memos, where: {owner"),
         "assertions.0.row_count.table", "unknown table 'memos'"),
        (GOOD.replace("field: priority", "field: urgency"), "assertions.1.field_equals.field", "unknown column 'urgency'"),
        (GOOD.replace("- reply_contains: \"added\"", "- sql: {query: \"SELECT nope FROM notes\", expect: 1}"),
         "assertions.3.sql.query", "does not compile"),
        (GOOD.replace("- reply_contains: \"added\"", "- sql: {query: \"DELETE FROM notes\", expect: 1}"),
         "assertions.3.sql.query", "read-only"),
        (GOOD.replace("- reply_contains: \"added\"", "- reply_matches: \"(unclosed\""),
         "assertions.3.reply_matches.pattern", "invalid regular expression"),
        (GOOD.replace("- reply_contains: \"added\"", "- row_total: {table: notes}"), "assertions.3", "row_total"),
        (GOOD + "faults: [{tool: add_note, kind: explode}]\n", "faults.0.kind", "drop_response"),
        (GOOD + "limits: {max_steps: 0}\n", "limits.max_steps", "greater than or equal to 1"),
        (GOOD.replace("fixture: default\n", "") + "fixture: tuesday\n", "fixture", "unknown fixture"),
        ("- just\n- a list\n", "", "one mapping"),
    ],
)
def test_malformed_case_names_file_and_field(tmp_path: Path, text: str, field: str, words: str) -> None:
    folder = suite_with(tmp_path, text.replace("domain: ../domain.py", "domain: ../domain.py"))
    with pytest.raises(CaseError) as info:
        load_suite(str(folder))
    assert info.value.file.endswith("bad.yaml")
    assert info.value.field.startswith(field)
    assert words in str(info.value)


def test_duplicate_ids_are_rejected(tmp_path: Path) -> None:
    folder = suite_with(tmp_path, GOOD, "a.yaml")
    (folder / "b.yaml").write_text(GOOD)
    with pytest.raises(CaseError, match="duplicate case id 'add-note'"):
        load_suite(str(folder))


@pytest.mark.parametrize("make", ["fifo", "dangling-link"])
def test_a_case_file_that_is_not_a_regular_file_is_an_error_not_skipped(tmp_path: Path, make: str) -> None:
    """A named pipe or a dangling link named like a case used to be left out without a word: a suite that
    silently runs fewer cases than it holds."""
    folder = suite_with(tmp_path, GOOD, "a.yaml")
    odd = folder / "b.yaml"
    if make == "fifo":
        os.mkfifo(odd)
    else:
        odd.symlink_to(folder / "gone.yaml")
    (folder / "drafts.yaml").mkdir()  # a folder is not a case file: still ignored
    words = "named pipe" if make == "fifo" else "dangling symbolic link"
    with pytest.raises(CaseError, match=f"{words}.*must be a regular file") as caught:
        load_suite(str(folder))
    assert "b.yaml" in str(caught.value)


def test_cli_rejects_a_bad_suite_before_any_trial(tmp_path: Path) -> None:
    folder = suite_with(tmp_path, GOOD + "colour: blue\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(folder), "--agent", "careful", "--out", str(out)])
    assert result.exit_code == 2
    [line] = result.output.splitlines()
    assert line.startswith(f"error: {folder / 'bad.yaml'}: colour: unknown field")
    assert not out.exists()


def test_cli_rejects_unknown_agent_and_suite(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["run", str(NOTES / "cases"), "--agent", "nosuchmodule:fn"])
    assert r.exit_code == 2 and "cannot import agent module" in r.output
    r = CliRunner().invoke(main, ["run", "no-such-suite", "--agent", "careful"])
    assert r.exit_code == 2 and "not a built-in suite" in r.output


def alias_bomb(levels: int) -> str:
    """A "billion laughs" under ``user.facts``: 10**levels values from a few lines."""
    lines = ["user:", "  identity: alice", "  facts:", "    l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"    l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_is_rejected_before_anything_expands_it(tmp_path: Path) -> None:
    good = GOOD.replace("user: {identity: alice, facts: {body: \"about the weekend\"}}\n", "")
    folder = suite_with(tmp_path, good + alias_bomb(7))  # 10 million values: past the limit, harmless to build
    with pytest.raises(CaseError) as info:
        load_suite(str(folder))
    assert info.value.field.startswith("user.facts.l6") and "alias bomb" in info.value.message
    (tmp_path / "b").mkdir()
    billion = suite_with(tmp_path / "b", good + alias_bomb(9))
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(billion), "--agent", "careful", "--out", str(out)])
    assert result.exit_code == 2 and "bad.yaml: user.facts.l8" in result.output and "alias bomb" in result.output
    assert not out.exists()


@pytest.mark.parametrize("command", ["run", "lint"])
def test_a_control_character_is_one_line_naming_where(tmp_path: Path, command: str) -> None:
    # PyYAML's ReaderError has no mark and a second line: in "<unicode string>", position N
    folder = suite_with(tmp_path, GOOD.replace("weekend", "week\x07end"))
    args = ["run", str(folder), "--agent", "careful", "--out", str(tmp_path / "run")] if command == "run" else \
        ["cases", "lint", str(folder)]
    result = CliRunner().invoke(main, args)
    [line] = [x for x in result.output.splitlines() if "bad.yaml" in x]
    assert result.exit_code == (2 if command == "run" else 1), result.output
    assert "bad.yaml: character " in line and "unacceptable character #x0007" in line
    assert "<unicode string>" not in result.output


def test_anchors_that_expand_a_little_are_fine(tmp_path: Path) -> None:
    text = GOOD.replace('facts: {body: "about the weekend"}', 'facts: {body: &b "about the weekend", again: *b}')
    [case] = load_suite(str(suite_with(tmp_path, text))).cases
    assert case.user.facts == {"body": "about the weekend", "again": "about the weekend"}


RUNAWAY = "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"


@pytest.mark.parametrize(("assertion", "field"), [
    (f'- sql: {{query: "{RUNAWAY}", expect: 1}}', "assertions.3.sql.query"),
    (f'- field_equals: {{table: notes, field: priority, equals: {{sql: "{RUNAWAY}"}}}}', "assertions.3.field_equals.equals.sql"),
])
def test_a_runaway_sql_assertion_is_bad_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, assertion: str,
                                              field: str) -> None:
    monkeypatch.setattr("passhat.world.query.QUERY_STEP_BUDGET", 2_000_000)  # the default takes a second to reach
    folder = suite_with(tmp_path, GOOD.replace('- reply_contains: "added"', assertion))
    with pytest.raises(CaseError) as info:
        load_suite(str(folder))
    assert info.value.field == field and "SQLite steps" in info.value.message and "WITH RECURSIVE" in info.value.message
    lint = CliRunner().invoke(main, ["cases", "lint", str(folder)])
    assert lint.exit_code == 1 and "bad-sql" in lint.output and "SQLite steps" in lint.output


def test_a_query_that_runs_away_on_the_final_state_fails_its_grade_closed(monkeypatch: pytest.MonkeyPatch,
                                                                          notes_domain: object) -> None:
    from passhat.cases import Case
    from passhat.graders.state import grade_state
    from passhat.world import QueryBudgetExceeded, World, bounded_query

    monkeypatch.setattr("passhat.world.query.QUERY_STEP_BUDGET", 2_000_000)
    loops = ("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r "
             "WHERE (SELECT count(*) FROM notes WHERE title = 'loop') > 0) SELECT count(*) FROM r")
    world = World.restore(notes_domain.image("default"), 1)  # type: ignore[attr-defined]
    assert world.query(loops) == [(1,)]  # finishes on the fixture: lint and load accept it
    world.db.execute("INSERT INTO notes (id, owner, title) VALUES ('N-9', 'alice', 'loop')")
    with pytest.raises(QueryBudgetExceeded):
        bounded_query(world.db, loops, steps=100_000)
    case = Case.model_validate({"id": "c", "domain": "notes", "instruction": "x",
                                "assertions": [{"sql": {"query": loops, "expect": 1}}]})

    class View:
        pass

    view = View()
    view.case, view.query = case, world.query  # type: ignore[attr-defined]
    [grade] = grade_state(view)  # type: ignore[arg-type]
    assert not grade.passed and "could not evaluate: QueryBudgetExceeded" in grade.reason
    world.db.execute("SELECT 1")  # the connection is usable afterwards (no progress handler left behind)
    world.close()


@pytest.mark.parametrize(("limits", "field"), [("{max_seconds: .inf}", "limits.max_seconds"),
                                               ("{max_cost: .nan}", "limits.max_cost"),
                                               ("{max_cost: -1}", "limits.max_cost")])
def test_budgets_are_finite_numbers(tmp_path: Path, limits: str, field: str) -> None:
    with pytest.raises(CaseError) as info:
        load_suite(str(suite_with(tmp_path, GOOD + f"limits: {limits}\n")))
    assert info.value.field == field


def test_a_negative_seed_is_refused_before_any_trial(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(NOTES / "cases"), "--agent", "careful", "--seed", "-5", "--out", str(out)])
    assert result.exit_code == 2 and "--seed" in result.output and not out.exists()


def test_a_case_is_found_by_id_in_the_suite_as_it_is_now() -> None:
    """``Suite.case`` is an index built on first use: it must follow the suite's cases when they are replaced
    (a subset, ``dataclasses.replace``) or grow, and name a missing id with KeyError."""
    import dataclasses

    suite = load_suite("refunds")
    assert [suite.case(c.id) for c in suite.cases] == suite.cases
    with pytest.raises(KeyError):
        suite.case("no-such-case")
    first, rest = suite.cases[0], suite.cases[1:]
    smaller = dataclasses.replace(suite, cases=list(rest))
    with pytest.raises(KeyError):
        smaller.case(first.id)
    assert suite.case(first.id) is first
    smaller.cases.append(first)
    assert smaller.case(first.id) is first
    suite.cases = list(rest)
    with pytest.raises(KeyError):
        suite.case(first.id)
    second = suite.cases[0]
    suite.cases[0] = first  # a case replaced in place: same length, same list
    assert suite.case(first.id) is first
    with pytest.raises(KeyError):
        suite.case(second.id)
    edited = first.model_copy(update={"instruction": "changed"})
    suite.cases[0] = edited  # the same id, an edited case: the one in the list now
    assert suite.case(first.id) is edited
