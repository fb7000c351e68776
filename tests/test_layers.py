"""passhat's layers: a module imports its own layer and those below, never one above (lazy imports included).

The order is the flow of a run read bottom-up: foundations, the world a trial acts on, the tool boundary, the
model layer and the tool server, agents, cases and their grading, the runner, benchmarks imported from a
checkout (their replay harnesses drive the runner), results, decisions, the library, the command line. A new
top-level module must be given a layer here; that choice is the review.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).parents[1] / "src" / "passhat"

LAYERS: list[tuple[str, set[str]]] = [
    ("foundations", {"errors", "outages", "shutdown", "inputs", "validation", "seeding", "imports", "sources", "metric_names",
                     "redaction", "docgen", "console", "models", "stats", "localhttp", "capped_http", "sequential", "rounding",
                     "_docstrings", "_trusted"}),
    ("the world a trial acts on", {"sandbox", "workspace", "world", "worlds"}),
    ("the tool boundary", {"tools", "episode", "tracing"}),
    ("the model layer and the tool server", {"llm", "serve", "client"}),
    ("agents", {"agents"}),
    ("cases, users and grading", {"cases", "domain", "domains", "graders", "upstream", "users", "suites", "attribution",
                                  "attribution_rows", "testing", "scaffold", "lint"}),
    ("the runner", {"runner"}),
    ("benchmarks imported from a checkout", {"tau_bench", "tau2_bench"}),
    ("results", {"results", "compare", "regression", "calibrate", "canary", "regrade", "export"}),
    ("decisions and reports", {"gate", "report"}),
    ("the library", {"api", "pytest_plugin", "shadow"}),
    ("the command line", {"commands", "cli", "__main__", "__init__"}),
]
LAYER_OF = {name: rank for rank, (_, names) in enumerate(LAYERS) for name in names}


def top_level_names() -> set[str]:
    return {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}


def imports_of(path: Path) -> Iterator[tuple[str, int]]:
    """The top-level passhat modules ``path`` imports, anywhere in it (a function's lazy import too)."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "passhat":
                yield from ((alias.name, node.lineno) for alias in node.names)
            elif node.module.startswith("passhat."):
                yield node.module.split(".")[1], node.lineno
        elif isinstance(node, ast.Import):
            yield from ((a.name.split(".")[1], node.lineno) for a in node.names if a.name.startswith("passhat."))


def test_every_top_level_module_has_a_layer() -> None:
    unplaced = top_level_names() - set(LAYER_OF) - {"py"}
    assert not unplaced, f"give these a layer in tests/test_layers.py: {sorted(unplaced)}"


def test_no_module_imports_a_layer_above_its_own() -> None:
    names = top_level_names()
    upward = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if "workspaces" in rel.parts:  # the built-in workspace fixtures are projects of their own
            continue
        owner = rel.parts[0].removesuffix(".py")
        for target, line in imports_of(path):
            if target in names and LAYER_OF[target] > LAYER_OF[owner]:
                upward.append(f"{rel}:{line} ({LAYERS[LAYER_OF[owner]][0]}) imports {target} "
                              f"({LAYERS[LAYER_OF[target]][0]})")
    assert not upward, "upward imports:\n" + "\n".join(sorted(upward))


def test_the_model_layer_sits_below_its_users() -> None:
    """The issue this order came from: model clients lived under agents, so the judge and the user imported upward."""
    for user in ("agents", "users", "graders"):
        assert LAYER_OF["llm"] < LAYER_OF[user]
    assert not (PACKAGE / "agents" / "llm").exists()


def test_the_check_finds_an_upward_import(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from passhat.runner.run import execute\n")
    assert [t for t, _ in imports_of(probe)] == ["runner"] and LAYER_OF["runner"] > LAYER_OF["llm"]


def test_test_helpers_are_modules_not_conftest_imports() -> None:
    """``from conftest import`` finds whichever conftest.py is first on sys.path: run two folders together and a
    test imports another folder's helpers, or fails to collect. Helpers live in ``tests/…/helpers.py``."""
    offenders = [str(p.relative_to(PACKAGE.parents[1])) for p in (PACKAGE.parents[1] / "tests").rglob("*.py")
                 if "from conftest import" in p.read_text("utf-8") or "import conftest" in p.read_text("utf-8")]
    assert offenders == [p for p in offenders if p.endswith("test_layers.py")]
