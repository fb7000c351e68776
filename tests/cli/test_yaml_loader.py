"""User YAML is read with libyaml when PyYAML has it, with the same results and the same refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from passhat import validation
from passhat.validation import MAX_DEPTH, YamlExpansionError, load_yaml

ROOT = Path(__file__).parents[2]
FILES = sorted((ROOT / "src" / "passhat" / "domains").rglob("*.yaml")) + sorted((ROOT / "examples").rglob("*.yaml"))


def test_the_c_loader_is_used_when_pyyaml_has_it() -> None:
    if not yaml.__with_libyaml__:
        pytest.skip("PyYAML built without libyaml")
    assert validation.FastLoader is yaml.CSafeLoader


@pytest.mark.parametrize("fast", [True, False], ids=["libyaml", "pure-python"])
def test_same_documents_as_safe_load(fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not fast:
        monkeypatch.setattr(validation, "FastLoader", None)
    assert len(FILES) > 20
    for path in FILES:
        text = path.read_text("utf-8")
        assert load_yaml(text) == yaml.safe_load(text), path


def levels(value: object) -> int:
    n = 0
    while isinstance(value, list):
        n, value = n + 1, value[0] if value else None
    return n


@pytest.mark.parametrize("fast", [True, False], ids=["libyaml", "pure-python"])
def test_runaway_nesting_is_refused_not_a_crash(fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if not fast:
        monkeypatch.setattr(validation, "FastLoader", None)
    assert levels(load_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH)) == MAX_DEPTH
    with pytest.raises(YamlExpansionError, match="nested too deeply"):
        load_yaml("[" * 100_000 + "]" * 100_000)


def test_a_document_libyaml_would_overflow_the_stack_on_is_refused_in_a_fresh_process() -> None:
    """libyaml's composer recurses in C: without the depth check this process dies with SIGSEGV."""
    code = ("from passhat.validation import load_yaml, YamlExpansionError\n"
            "try:\n    load_yaml('[' * 1_000_000 + ']' * 1_000_000)\nexcept YamlExpansionError as e:\n    print(e.problem)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT / "src"), "PATH": ""})
    assert r.returncode == 0 and "nested too deeply" in r.stdout, (r.returncode, r.stderr)


def test_the_alias_count_runs_on_every_document_that_could_hold_an_alias(monkeypatch: pytest.MonkeyPatch) -> None:
    """It is skipped only where no `*` is written (an alias is always `*NAME`; ~3 % of passhat run's start-up):
    each of the built-in case files, counted, finds nothing to refuse; an alias, or a `*` anywhere, is counted."""
    counted: list[object] = []
    real = validation._check_expansion
    monkeypatch.setattr(validation, "_check_expansion", lambda node: counted.append(node) or real(node))
    for path in FILES:
        real(yaml.compose(path.read_text("utf-8")))  # the count itself never refuses an alias-free file
    assert load_yaml("a: [1, 2]\nb: {c: d}\n") == {"a": [1, 2], "b": {"c": "d"}} and counted == []
    assert load_yaml("a: &x [1, 2]\nb: *x\n") == {"a": [1, 2], "b": [1, 2]} and len(counted) == 1
    assert load_yaml("a: '*'\n") == {"a": "*"} and len(counted) == 2
    with pytest.raises(YamlExpansionError):
        load_yaml("a: &a [*a]\n")
