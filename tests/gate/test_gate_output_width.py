"""The gate's table in a pipe: as wide as its longest reason (a CI log is not resized), unless COLUMNS
asks for a width, which it then keeps, folding reasons (not cutting them)."""

from __future__ import annotations

from typing import Any


def _table_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(" ") and line.strip()]


def test_the_gate_table_honours_columns_in_a_pipe(cli: Any, fake_run: Any, gate_file: Any) -> None:
    run = fake_run("run", {f"case-{i:02d}": "ppfp" for i in range(12)})
    gate = gate_file("rules:\n  - case_success_rate: {min: 0.7}\n  - pass_hat_k: {k: 2, min: 0.5}\n")
    wide = cli("gate", run, "--gate", gate, env={"COLUMNS": None})
    assert wide.exit_code in (0, 1, 3), wide.output
    natural = max(len(line) for line in _table_lines(wide.output))
    assert natural > 150, wide.output  # each reason on one line
    for columns in (80, 120):
        narrow = cli("gate", run, "--gate", gate, env={"COLUMNS": str(columns)})
        assert narrow.exit_code == wide.exit_code
        lines = _table_lines(narrow.output)
        assert lines and max(len(line) for line in lines) <= columns, narrow.output
        folded = " ".join(line.strip() for line in lines)
        assert "mean per-case pass" in folded and "vs bar 0.7" in folded  # folded, nothing cut
