"""A malformed case is rejected before any trial runs, naming the file, the field and what is valid."""

from __future__ import annotations

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


def test_cli_rejects_a_bad_suite_before_any_trial(tmp_path: Path) -> None:
    folder = suite_with(tmp_path, GOOD + "colour: blue\n")
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", str(folder), "--agent", "careful", "--out", str(out)])
    assert result.exit_code == 2
    assert "bad.yaml: colour: unknown field" in result.output.replace("\n", "")
    assert not out.exists()


def test_cli_rejects_unknown_agent_and_suite(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["run", str(NOTES / "cases"), "--agent", "nosuchmodule:fn"])
    assert r.exit_code == 2 and "cannot import agent module" in r.output
    r = CliRunner().invoke(main, ["run", "no-such-suite", "--agent", "careful"])
    assert r.exit_code == 2 and "not a built-in suite" in r.output
