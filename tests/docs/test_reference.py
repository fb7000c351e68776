"""The case-file reference in docs/ is generated from the models and must match them."""

from pathlib import Path

from passhat.cases.reference import case_file_reference

DOC = Path(__file__).parents[2] / "docs" / "case-file.md"


def test_case_file_reference_is_up_to_date() -> None:
    assert DOC.read_text("utf-8") == case_file_reference(), "run: passhat cases reference > docs/case-file.md"


def test_every_field_is_documented() -> None:
    text = case_file_reference()
    undocumented = [line for line in text.splitlines() if line.startswith("| `") and line.endswith("|  |")]
    assert undocumented == []


def test_agent_protocol_reference_is_up_to_date() -> None:
    from passhat.serve.protocol import protocol_reference

    doc = DOC.parent / "agent-protocol.md"
    assert doc.read_text("utf-8") == protocol_reference(), "run: passhat agents protocol > docs/agent-protocol.md"
    rows = [line for line in protocol_reference().splitlines() if line.startswith("| `")]
    assert len(rows) > 20 and [line for line in rows if line.endswith("|  |")] == []  # every field has a meaning


def test_fields_of_nested_models_are_documented() -> None:
    """``unchanged_except: {rows: [{table, where, columns}]}``: RowScope's fields were missing from the doc."""
    text = case_file_reference()
    section = text[text.index("#### `unchanged_except.rows[]`"):]
    for field in ("`table`", "`where`", "`columns`"):
        assert f"| {field} |" in section.split("\n### ")[0], field


def test_record_reference_is_up_to_date_and_every_field_has_a_meaning() -> None:
    """docs/records.md is generated from TrialRecord and the models it holds (issue 20 item 2)."""
    from passhat.runner.record_reference import record_reference

    doc = DOC.parent / "records.md"
    assert doc.read_text("utf-8") == record_reference(), "run: python -m passhat.runner.record_reference > docs/records.md"
    rows = [line for line in record_reference().splitlines() if line.startswith("| `")]
    assert len(rows) > 80 and [line for line in rows if line.endswith("|  |")] == []


def test_the_record_json_schema_describes_every_field() -> None:
    from passhat.runner.records import TrialRecord

    schema = TrialRecord.model_json_schema()
    models = {"TrialRecord": schema, **schema["$defs"]}
    undocumented = [f"{name}.{field}" for name, model in models.items()
                    for field, spec in model.get("properties", {}).items() if not spec.get("description")]
    assert undocumented == [] and {"Grade", "ToolCall", "Span", "Timing"} <= set(models)
