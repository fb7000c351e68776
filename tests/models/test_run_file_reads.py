"""No string-key reads of run-file data outside the models (issue 20 item 2): readers take the models.

``tests/models/run_file_reads.py`` defines what counts; 599 such reads at 2f86ff6, 0 since.
"""

from __future__ import annotations

from tests.models.run_file_reads import count_reads, reads_in, run_file_keys


def test_no_reader_reads_a_run_file_by_key() -> None:
    reads = count_reads()
    assert reads == [], "read the model's attributes instead:\n" + "\n".join(
        f"src/passhat/{r.module}:{r.line}: [{r.key}] {r.text}" for r in reads)


def test_the_count_can_fire() -> None:
    """The ways a run file was read by key are each found; what is not a read is not."""
    source = '''
def show(summary, manifest, record, COLORS, model, case):
    a = summary["suite"]["pass_hat_k"]
    b = manifest.get("agent", "?")
    c = "trials_bytes" in summary
    d = case.pop("top_failure", None)
    summary["agent"] = "stored, not read"
    e = COLORS["pass_at_k"]
    f = model.model_fields["kind"]
    g = case["not_a_field_of_any_run_file"]
    h = record.get("outcome")  # not a run file: a trial's outcome file elsewhere
    x: Literal["pass_hat_k"] = "pass_hat_k"
'''
    found = [(r.line, r.key) for r in reads_in("report/example.py", source, run_file_keys())]
    assert found == [(3, "pass_hat_k"), (3, "suite"), (4, "agent"), (5, "trials_bytes"), (6, "top_failure")]
    assert list(reads_in("models/example.py", source, run_file_keys())) == []  # the models' own modules
    assert list(reads_in("domains/example.py", source, run_file_keys())) == []  # a module listed, with its reason
