"""``passhat cases lint``: every error class on a deliberately broken suite; the built-in suites are clean."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from passhat.cli import main
from passhat.lint import lint_suite
from passhat.lint.checks import near_duplicates
from passhat.lint.loading import load_for_lint
from passhat.lint.similarity import similar, similarity

NOTES = Path(__file__).parents[1] / "data" / "notes"
DOMAIN = str(NOTES / "domain.py")
STATE = [{"row_count": {"table": "notes", "where": {"title": "call mom"}, "equals": 1}}]


def case(case_id: str, instruction: str = "Add a note titled 'call mom'.", **extra: Any) -> dict[str, Any]:
    return {"id": case_id, "domain": DOMAIN, "instruction": instruction, "user": {"identity": "alice"},
            "assertions": STATE, **extra}


def write(folder: Path, name: str, data: Any) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    (folder / f"{name}.yaml").write_text(text, "utf-8")


@pytest.fixture
def broken(tmp_path: Path) -> Path:
    """One file per error class (some files carry several problems, all of which must be found)."""
    f = tmp_path / "broken"
    write(f, "a-yaml", "id: x\ninstruction: [unclosed\n")
    write(f, "b-schema", {**case("schema"), "colour": "red", "limits": {"max_steps": "many"}})
    write(f, "c-refs", case("refs", required_tools=["teleport"], faults=[{"tool": "fly", "kind": "error"}],
                            user={"identity": "alice", "turns": [{"say": "hi", "when": "(unclosed"}]},
                            assertions=[{"row_count": {"table": "nope", "equals": 1}},
                                        {"field_equals": {"table": "notes", "where": {"colour": "red"}, "field": "title",
                                                          "equals": "x"}},
                                        {"sql": {"query": "SELECT missing FROM notes", "expect": 1}},
                                        {"sql": {"query": "DELETE FROM notes", "expect": 1}},
                                        {"reply_matches": {"pattern": "[oops"}}]))
    write(f, "d-fixture", case("fixture", fixture="tomorrow"))
    write(f, "e-domain", case("domain", domain="no_such_module_xyz:domain"))
    write(f, "f-dup-1", case("same-id"))
    write(f, "f-dup-2", case("same-id", "Something else entirely, about groceries."))
    write(f, "g-fam-dev", case("fam-dev", "Add a note for the dentist appointment.", group="dentist"))
    write(f, "g-fam-holdout", case("fam-holdout", "Book-keeping: a note on the dentist visit.", group="dentist",
                                   split="holdout"))
    write(f, "h-near-dev", case("near-dev", "Please add a note titled 'buy milk' with priority 3."))
    write(f, "h-near-holdout", case("near-holdout", "Please add a note titled 'buy milk' with priority 2!", split="holdout"))
    write(f, "i-prose", case("prose", assertions=[{"reply_contains": "added"}]))
    write(f, "j-empty", case("empty", assertions=[]))
    write(f, "k-todo", case("todo", description="TODO: what this case tests"))
    write(f, "l-contra", case("contra", required_tools=["add_note"], forbidden_tools=["add_note"]))
    return f


def codes(report: Any) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in report.findings:
        out.setdefault(f.code, []).append(Path(f.file).stem)
    return out


def test_lint_finds_every_error_class(broken: Path) -> None:
    report = lint_suite(str(broken))
    found = codes(report)
    assert found["yaml"] == ["a-yaml"]
    assert found["schema"] == ["b-schema", "b-schema"]  # both problems of one file, not just the first
    assert sorted(found["unknown-tool"]) == ["c-refs", "c-refs"]
    assert found["unknown-table"] == ["c-refs"]
    assert found["unknown-column"] == ["c-refs"]
    assert found["bad-sql"] == ["c-refs", "c-refs"]
    assert found["bad-regex"] == ["c-refs", "c-refs"]
    assert found["unknown-fixture"] == ["d-fixture"]
    assert found["domain"] == ["e-domain"]
    assert found["duplicate-id"] == ["f-dup-2"]
    assert found["family-leak"] == ["g-fam-holdout"]
    assert found["near-duplicate"] == ["h-near-holdout"]
    assert found["no-state-assertion"] == ["i-prose"]
    assert found["no-assertions"] == ["j-empty"]
    assert found["unfinished"] == ["k-todo"]
    assert found["contradiction"] == ["l-contra"]
    schema = [f for f in report.findings if f.code == "schema"]
    assert {f.field for f in schema} == {"colour", "limits.max_steps"}
    assert "valid fields: id, domain" in next(f.message for f in schema if f.field == "colour")
    assert [f.severity for f in report.findings if f.code == "near-duplicate"] == ["warning"]
    assert not report.ok()


def test_lint_cli_exit_codes(broken: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["cases", "lint", str(broken), "--json"])
    assert r.exit_code == 1
    data = json.loads(r.output)
    assert data["errors"] >= 17 and data["cases"] == 15
    only_warning = tmp_path / "warn"
    write(only_warning, "a", case("a", "Please add a note titled 'buy milk' with priority 3."))
    write(only_warning, "b", case("b", "Please add a note titled 'buy milk' with priority 2!", split="holdout"))
    r = CliRunner().invoke(main, ["cases", "lint", str(only_warning)])
    assert r.exit_code == 0 and "near-duplicate" in r.output and "0 error(s), 1 warning(s)" in r.output
    assert CliRunner().invoke(main, ["cases", "lint", str(only_warning), "--strict"]).exit_code == 1
    assert CliRunner().invoke(main, ["cases", "lint", str(tmp_path / "missing")]).exit_code == 2


@pytest.mark.parametrize("suite", ["reimbursement", "refunds"])
def test_builtin_suites_are_clean(suite: str) -> None:
    r = CliRunner().invoke(main, ["cases", "lint", suite, "--strict"])
    assert r.exit_code == 0, r.output
    report = lint_suite(suite)
    assert report.findings == []
    cov = report.coverage
    assert cov["splits"]["holdout"] >= 1 and sum(cov["splits"].values()) == report.cases
    assert cov["families"] >= 1


def test_coverage_by_split_tag_and_tool(broken: Path) -> None:
    cov = lint_suite(str(broken)).coverage
    assert cov["splits"] == {"dev": 11, "holdout": 2, "regression": 0}
    tools = cov["tools"]
    assert tools["add_note"]["required"] == 1 and tools["add_note"]["forbidden"] == 1
    assert "broken" in cov["unexercised_tools"] and "add_note" not in cov["unexercised_tools"]


def test_similarity_catches_rewrites_not_different_tasks() -> None:
    assert similarity("Refund order 4812, please!", "refund order 4812 please") == 1.0
    assert similar("Could you reimburse invoice INV-104?", "Could you reimburse invoice INV-105?") is not None
    assert similar("帮我报销发票 INV-104,是打车费。", "帮我报销发票INV-104，是打车费") is not None  # NFKC: full-width punctuation
    assert similar("Refund order 4812.", "Cancel my subscription and delete my account.") is None


def test_near_duplicates_are_every_pair_across_splits_in_pair_order(tmp_path: Path) -> None:
    """Prepared once per case, the requests must still give each pair's finding (three splits, a family, a
    user.goal beside an instruction, a pair under the threshold), in the order of the pairs."""
    f = tmp_path / "near"
    texts = {"a": "Please add a note titled 'buy milk' with priority 3.",
             "b": "Please add a note titled 'buy milk' with priority 2!",
             "c": "please add a note titled buy milk, priority 4",
             "d": "Delete every note about the dentist.",
             "e": "Priority 3: add a note titled 'buy milk', please."}
    write(f, "1-a", case("a", texts["a"]))
    write(f, "2-b", case("b", texts["b"], split="holdout"))
    write(f, "3-c", case("c", "Hi, I need help.", split="regression", user={"identity": "alice", "goal": texts["c"]}))
    write(f, "4-d", case("d", texts["d"], split="holdout"))
    write(f, "5-e", case("e", texts["e"], split="holdout", group="milk"))
    write(f, "6-f", case("f", texts["a"], split="regression", group="milk"))
    splits = {"a": "dev", "b": "holdout", "c": "regression", "d": "holdout", "e": "holdout", "f": "regression"}
    texts["f"] = texts["a"]
    expected = [(y, x) for i, x in enumerate("abcdef") for y in "abcdef"[i + 1:]
                if splits[x] != splits[y] and {x, y} != {"e", "f"} and similarity(texts[x], texts[y]) >= 0.85]
    found = near_duplicates(load_for_lint(f)[0])
    assert expected and [(g.case_id, g.message.split("as '")[1][0]) for g in found] == expected
    assert any("user.goal" in g.message for g in found)
