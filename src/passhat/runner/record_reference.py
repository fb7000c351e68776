"""docs/records.md, generated from :class:`~passhat.runner.records.TrialRecord` and the models it holds.

Run ``python -m passhat.runner.record_reference > docs/records.md``; ``tests/docs/test_reference.py`` fails
when the committed file and the models drift apart.
"""

from __future__ import annotations

from passhat.docgen import doc_text, field_table, nested_sections
from passhat.runner.records import NOT_A_RECORD, RECORD_SCHEMA, TrialRecord

VERSIONS = [
    (f"`{RECORD_SCHEMA}`", "the fields below", "yes"),
    ("none", "records written before versions were recorded: the same shape, some later fields absent (they take "
     "their defaults)", f"yes, as `{RECORD_SCHEMA}`"),
    ("a newer `passhat.record/N`", "written by a newer passhat", "no: the reader stops at that line, naming the file, "
     "the line and both versions, and says to upgrade passhat"),
    ("any other", "not a trial record", f"no: the error names the line; {NOT_A_RECORD}"),
]
"""What a reader does with a record of each ``schema_version``."""

INTRO = """\
# Trial record reference

Generated from `passhat.runner.records` by `python -m passhat.runner.record_reference`; do not edit.

Each line of a run's `trials.jsonl` is one trial, written whole as one JSON object: a `TrialRecord`.
Read them as models, not as dicts: `passhat.Run.open(folder).records()` streams them, and
`TrialRecord.model_validate_json(line)` reads one line. `TrialRecord.model_json_schema()` is the record's
JSON Schema, with the meanings below as descriptions. Values were redacted before they were written
(unless the run said `--no-redact`: the manifest's `redaction`).

## Versions

{versions}

A line that is not a record of this shape is an error naming `trials.jsonl:LINE` and the field; a partial last line
(a run killed while writing) is skipped.
"""


def record_reference() -> str:
    """The Markdown of docs/records.md."""
    table = ["| `schema_version` | shape | read by this passhat |", "|---|---|---|",
             *(f"| {version} | {shape} | {read} |" for version, shape, read in VERSIONS)]
    out = [INTRO.format(versions="\n".join(table)), "## `TrialRecord`", "", doc_text(TrialRecord), "",
           *field_table(TrialRecord), ""]
    out += nested_sections("record", TrialRecord, "##", set())
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    print(record_reference(), end="")
