"""Count the string-key reads of run-file data outside the models (issue 20 item 2), at HEAD or any revision.

A run folder's files — ``manifest.json``, ``summary.json``, ``gate.json``, the comparison JSON and the
records of ``trials.jsonl`` — are the dumps of models (``passhat.models``, ``runner.records.TrialRecord``)
and are meant to be read through them: ``summary.suite.pass_hat_k[4].low``, not
``summary["suite"]["pass_hat_k"]["4"]["ci_low"]``. This script finds what is still read by key.

What counts as a read, found in the syntax tree of every module of ``src/passhat``:

- ``x["key"]`` (a subscript that loads, not one that stores), ``x.get("key", …)``, ``x.pop("key", …)``,
  ``x.setdefault("key", …)`` and ``"key" in x`` / ``"key" not in x``,
- where ``"key"`` is a field name of those models or of any model nested in them (the keys such a file
  holds; the set is taken from the models of the checkout running the script).

Type annotations (``Literal["pass_hat_k"]``), model introspection (``Model.model_fields["kind"]``) and
a module's constant tables (``COLORS["pass_at_k"]``, an upper-case name) are not reads. The models' own
modules (``passhat/models/``, ``runner/records.py``) are where the files are read and written, so they
are not counted. Nor are the modules and functions in ``NOT_RUN_FILES``, each
with the reason its keys are another file's or protocol's that happen to share a name (``id``, ``name``,
``tool``…): a key-only count would otherwise report a tool's arguments as a run-file read. A line that
reads another file in a module that also reads run files says so: ``# not a run file: WHY``.

Run: ``python tests/models/run_file_reads.py`` (every read, by module) or ``--rev REV`` to count another
revision of the same tree (``--rev 2f86ff6`` is the count before issue 20 item 2). ``--quiet`` prints the
total alone. ``tests/models/test_run_file_reads.py`` holds the count at zero.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import typing
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import UnionType

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "src/passhat"

MODELS_OWN = ("models/", "runner/records.py")
"""Where the files are read and written: the models' own modules."""

NOT_RUN_FILES: dict[str, str] = {
    "agents/": "agents speak model APIs and the episode's tool protocol, never read a run folder",
    "llm/": "the model clients: providers' requests and replies",
    "domains/": "built-in domains' tools: their arguments and rows",
    "tau_bench/": "τ-bench tasks and tools",
    "tau2_bench/": "τ²-bench tasks and tools",
    "testing/": "fake model servers: chat-completion requests and replies",
    "serve/": "the agent protocol over HTTP and MCP (docs/agent-protocol.md)",
    "client.py": "the agent-side client of the agent protocol",
    "tools/": "tool calls and cassette files (recorded external calls), not run files",
    "cases/": "case files (YAML), validated by their own models",
    "lint/": "case files and their coverage",
    "scaffold/": "generated agent templates and MCP tool listings",
    "sandbox/": "sandbox setup",
    "world/": "worlds and fixtures",
    "worlds/": "worlds and fixtures",
    "workspace/": "a workspace domain's file diff: FileDiff's own JSON, read by FileDiff.from_json",
    "upstream/": "upstream MCP servers' messages",
    "users/": "user simulators' model messages",
    "graders/": "graders read the world and the episode in memory; the judge's reply is the judge's JSON",
    "canary/": "production outcome files (docs/canary.md), not run files",
    "calibrate/": "human label files and calibration reports (records are read as TrialRecord models)",
    "commands/calibrate.py:print_report": "a calibration report",
    "commands/calibrate.py:calibrate": "a calibration report",
    "commands/cases.py": "case files and their coverage",
    "commands/from_failure.py": "the case file it writes",
    "shadow/cases.py": "shadow case files (YAML)",
    "shadow/otlp.py": "OpenTelemetry trace files of production traffic",
    "shadow/promote.py": "shadow case files and recorded writes",
    "shadow/traces.py": "production conversation files",
    "shadow/divergence.py": "production conversation turns",
    "shadow/report.py": "shadow.json, read through models.ShadowReport (``\"reply\" in kinds`` is list membership)",
    "commands/shadow.py": "shadow.json, read through models.ShadowReport (``\"reply\" in kinds`` is list membership)",
    "suites/snapshot.py": "suite snapshot files (``passhat suite freeze``), their own format",
    "attribution.py": "Grade.details: each grader's own evidence, free-form by design",
    "attribution_rows.py": "Grade.details: each grader's own evidence, free-form by design",
    "pytest_plugin.py": "the plugin's parsed --passhat-rule, a regex match",
    "gate/load.py": "gate files (YAML) and pydantic's error dicts",
    "gate/schema.py": "gate files (YAML): a rule's mapping before validation",
    "gate/rules_canary.py": "production outcome files, compared by passhat.canary",
    "gate/rules_budget.py:_statistic": "a `passhat calibrate` report, not a run file",
}
"""Module (``dir/``, ``file.py``) or function (``file.py:function``) → why its string keys are not run-file reads.
A single line says so itself with a comment ``# not a run file: WHY``."""
LINE_MARK = "# not a run file:"


@dataclass(frozen=True)
class Read:
    module: str
    line: int
    key: str
    text: str


def run_file_keys() -> frozenset[str]:
    """Every field name (and alias) of the run files' models and of the models nested in them."""
    from pydantic import BaseModel

    from passhat.models import Comparison, GateResult, Manifest, Summary
    from passhat.runner.records import TrialRecord

    keys: set[str] = set()
    seen: set[type] = set()

    def visit(tp: object) -> None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            if tp in seen:
                return
            seen.add(tp)
            for name, info in tp.model_fields.items():
                keys.add(info.alias or name)
                visit(info.annotation)
        for arg in typing.get_args(tp):
            visit(arg)
        if isinstance(tp, UnionType):
            for arg in tp.__args__:
                visit(arg)

    for model in (Manifest, Summary, GateResult, Comparison, TrialRecord):
        visit(model)
    return frozenset(keys)


def excluded(module: str, function: str | None) -> bool:
    if module.startswith(MODELS_OWN):
        return True
    for where in NOT_RUN_FILES:
        path, _, func = where.partition(":")
        if func:
            if module == path and function == func:
                return True
        elif module == path or (path.endswith("/") and module.startswith(path)):
            return True
    return False


def _annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside a type annotation (arguments, returns, annotated assignments)."""
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg) and node.annotation is not None:
            roots.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            roots.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            roots.append(node.annotation)
    return {id(inner) for root in roots for inner in ast.walk(root)}


def _string_key(node: ast.AST) -> str | None:
    """The key a node reads, when it is a string-key read (see the module docstring)."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        if isinstance(node.value, ast.Name) and node.value.id in ("Literal", "Annotated"):
            return None
        if isinstance(node.value, ast.Attribute) and node.value.attr == "model_fields":
            return None
        if isinstance(node.value, ast.Name) and node.value.id.isupper():
            return None  # a module's constant table (COLORS["pass_at_k"]), not data read from a file
        if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            return node.slice.value
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("get", "pop", "setdefault") and node.args
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        return node.args[0].value
    if (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn)
            and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
        return node.left.value
    return None


def reads_in(module: str, source: str, keys: frozenset[str]) -> Iterator[Read]:
    if excluded(module, None):
        return
    tree = ast.parse(source)
    lines = source.splitlines()
    skip = _annotation_nodes(tree)

    def walk(node: ast.AST, function: str | None) -> Iterator[Read]:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) and function is None \
                else function
            if id(child) not in skip and not excluded(module, inner):
                key = _string_key(child)
                if key in keys and LINE_MARK not in lines[child.lineno - 1]:
                    yield Read(module, child.lineno, key, lines[child.lineno - 1].strip())
            yield from walk(child, inner)

    yield from walk(tree, None)


def sources(rev: str | None) -> Iterator[tuple[str, str]]:
    """(module path relative to src/passhat, text) of every Python module, at ``rev`` or in the work tree."""
    if rev is None:
        for path in sorted((ROOT / PACKAGE).rglob("*.py")):
            yield path.relative_to(ROOT / PACKAGE).as_posix(), path.read_text("utf-8")
        return
    listing = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", rev, PACKAGE],
                             capture_output=True, text=True, check=True).stdout.split()
    for name in sorted(n for n in listing if n.endswith(".py")):
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:{name}"], capture_output=True, text=True,
                              check=True).stdout
        yield name.removeprefix(PACKAGE + "/"), text


def count_reads(rev: str | None = None) -> list[Read]:
    keys = run_file_keys()
    return [read for module, text in sources(rev) for read in reads_in(module, text, keys)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rev", help="a git revision to count instead of the work tree")
    parser.add_argument("--quiet", action="store_true", help="print the total only")
    args = parser.parse_args()
    reads = count_reads(args.rev)
    if not args.quiet:
        for read in reads:
            print(f"{read.module}:{read.line}: [{read.key}] {read.text[:120]}")
        print()
        for module, n in Counter(r.module for r in reads).most_common():
            print(f"{n:5d}  {module}")
    print(f"{len(reads)} string-key read(s) of run-file data outside the models"
          f"{f' at {args.rev}' if args.rev else ''}")


if __name__ == "__main__":
    sys.exit(main())
