"""A malformed gate file is bad input (exit 2) naming the file, the field and what would be valid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from passhat.gate import GateError, load_gate
from passhat.gate.schema import GateFile
from passhat.models import CaseMeta

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.mark.parametrize(("text", "field", "words"), [
    ("rules:\n  - pass_hat_k: {k: 8, min: 0.25\n", "line", "invalid YAML"),
    ("- just a list\n", "", "one mapping"),
    ("rules: []\n", "rules", "at least 1 item"),
    ("name: x\n", "rules", "Field required"),
    ("colour: blue\nrules:\n  - no_new_failures:\n", "colour", "unknown field; valid fields: name, description, alpha"),
    ("rules:\n  - pass_hat_k: {k: 0, min: 0.25}\n", "rules.0.pass_hat_k.k", "greater than or equal to 1"),
    ("rules:\n  - pass_hat_k: {k: 8}\n", "rules.0.pass_hat_k.min", "Field required"),
    ("rules:\n  - pass_hat_k: {k: 8, min: 0.25, bar: 3}\n", "rules.0.pass_hat_k.bar",
     "unknown field; valid fields: name, description, alpha, select, k, min"),
    ("rules:\n  - pass_hat_8: {min: 0.25}\n", "rules.0", "unknown rule 'pass_hat_8'; valid rules: never_fails"),
    ("rules:\n  - {k: 8, min: 0.25}\n", "rules.0", "single-key mapping"),
    ("rules:\n  - never_fails: {select: {tag: {scenario: permission}}}\n", "rules.0.never_fails.select.tag",
     "valid fields: tags, split, cases"),
    ("rules:\n  - never_fails: {select: {split: test}}\n", "rules.0.never_fails.select.split.0", "'dev', 'holdout'"),
    ("alpha: 0.5\nrules:\n  - no_new_failures:\n", "alpha", "less than 0.5"),
    ("rules:\n  - latency: {percentile: 95}\n", "rules.0.latency.max_seconds", "Field required"),
])
def test_malformed_gate_names_file_and_field(tmp_path: Path, text: str, field: str, words: str) -> None:
    path = tmp_path / "bad-gate.yaml"
    path.write_text(text)
    with pytest.raises(GateError) as info:
        load_gate(path)
    assert info.value.file == str(path)
    assert info.value.field.startswith(field)
    assert words in str(info.value)


def test_gate_command_reports_a_malformed_file_with_exit_2(cli: Any, fake_run: Any, gate_file: Any) -> None:
    run = fake_run("run", {"a": "pp"})
    path = gate_file("rules:\n  - case_success_rate: {min: 1.5}\n", "broken.yaml")
    r = cli("gate", run, "--gate", path)
    assert r.exit_code == 2
    assert r.output.splitlines() == [f"error: {path}: rules.0.case_success_rate.min: Input should be less than or equal to 1"]


def test_short_forms_selection_and_default_labels() -> None:
    gate = GateFile.model_validate({"rules": [
        {"never_fails": {"select": {"tags": {"scenario": "permission"}, "split": "holdout"}}},
        {"no_new_failures": None},
        {"case_success_rate": {"select": {"tags": {"risk": ["high", "medium"]}}, "min": 0.7}},
        {"pass_at_k": {"k": 4, "min": 0.9, "name": "retries work"}},
    ]})
    assert [r.label() for r in gate.rules] == [
        "never fails [scenario=permission split=holdout]", "no new failures",
        "case success rate ≥ 0.7 [risk=high|medium]", "retries work"]
    select = gate.rules[2].select  # type: ignore[union-attr]
    assert select.matches("x", CaseMeta(tags={"risk": "medium"})) and not select.matches("x", CaseMeta(tags={"risk": "low"}))


@pytest.mark.parametrize("name", ["gate.yaml", "gates/release.yaml"])
def test_example_gates_are_valid(name: str) -> None:
    assert load_gate(EXAMPLES / name).gate.name == "release"


def test_docs_embed_the_generated_reference() -> None:
    from passhat.gate.reference import gate_file_reference

    doc = (Path(__file__).parents[2] / "docs" / "gates.md").read_text("utf-8")
    assert gate_file_reference() in doc, "regenerate the reference section of docs/gates.md from passhat.gate.reference"


def test_a_yaml_alias_bomb_in_a_gate_file_is_refused(tmp_path: Path) -> None:
    levels = ["l0: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)]  # 10^9 values if expanded
    path = tmp_path / "gate.yaml"
    path.write_text("description:\n  " + "\n  ".join(levels) + "\nrules:\n  - no_new_failures:\n")
    with pytest.raises(GateError) as info:
        load_gate(path)
    assert str(path) in str(info.value) and "alias bomb" in str(info.value)


MINIMAL = {"never_fails": {}, "no_new_failures": {}, "case_success_rate": {"min": 0.5}, "pass_hat_k": {"k": 1, "min": 0.5},
           "pass_at_k": {"k": 1, "min": 0.5}, "non_inferior": {"margin": 0.05}, "latency": {"max_seconds": 1},
           "cost_per_success": {"max": 1}, "judge_agreement": {"file": "c.json", "min": 0.5},
           "canary": {"baseline": "b.jsonl", "candidate": "c.jsonl", "max_drop": 0.02}}


def _numeric_fields() -> list[tuple[str, str]]:
    """(rule kind, field) for every number a rule holds, read from the models so a new field is covered."""
    from passhat.gate.schema import RULE_KINDS

    assert set(MINIMAL) == set(RULE_KINDS)
    return [(kind, name) for kind, model in RULE_KINDS.items() for name, info in model.model_fields.items()
            if any(t in str(info.annotation) for t in ("float", "int"))]


@pytest.mark.parametrize(("yaml_value", "words"), [(".nan", "not a number"), (".inf", "not a finite number"),
                                                   ("-.inf", "not a finite number")])
def test_nan_and_infinity_are_refused_in_every_numeric_field(tmp_path: Path, yaml_value: str, words: str) -> None:
    """A NaN bar compares false both ways (it was reported as "should be ≤ 1"); an infinite budget is no budget."""
    path = tmp_path / "gate.yaml"
    cases = [("", "alpha")] + _numeric_fields()
    assert len(cases) > 10
    for kind, field in cases:
        if kind:
            body = ", ".join(f"{k}: {v}" for k, v in {**MINIMAL[kind], field: yaml_value}.items())
            path.write_text(f"rules:\n  - {kind}: {{{body}}}\n")
        else:
            path.write_text(f"alpha: {yaml_value}\nrules:\n  - never_fails:\n")
        with pytest.raises(GateError) as info:
            load_gate(path)
        assert info.value.field == (f"rules.0.{kind}.{field}" if kind else field), (kind, field, str(info.value))
        assert info.value.message.startswith(words), (kind, field, str(info.value))
