"""τ²'s checks that passhat's built-in assertions cannot say: environment assertions and action checks.

- ``tau2_env_assertions``: a task's ``env_assertions``, run by τ²'s own toolkit functions on the trial's
  final state (read-only) in the task's order, with ``sync_tools()`` after each, as τ²'s
  ``EnvironmentEvaluator`` runs them; passes when every function returns its ``assert_value``.
- ``tau2_action``: one gold action was called — by the same side (agent or user) — with the arguments
  τ²'s ``Action.compare_with_tool_call`` compares; like τ², the call need not have succeeded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from passhat.graders import CustomGrader, TrialView, Verdict, grader

if TYPE_CHECKING:
    from passhat.tau2_bench.domain import Runtime

SIDE = {"assistant": "agent", "user": "user"}
"""τ²'s requestor → passhat's ``ToolCall.by``."""


class _Reader:
    """A read-only stand-in for the trial's connection, over ``TrialView.query``: what the store reads through."""

    def __init__(self, query: Any) -> None:
        self._query = query

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> _Rows:
        return _Rows(self._query(sql, params))


class _Rows(list[tuple[Any, ...]]):
    def fetchone(self) -> tuple[Any, ...] | None:
        return self[0] if self else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return list(self)


def tau2_env_assertions(runtime: Runtime) -> CustomGrader:
    """The ``tau2_env_assertions`` grader of a domain, bound to its τ² environment."""

    @grader(kind="state", name="tau2_env_assertions")
    def check(view: TrialView, checks: list[dict[str, Any]]) -> Verdict:
        """τ²'s env_assertions hold on the final state: each toolkit function returns its assert_value.

        Args:
            checks: The task's env_assertions: {env_type, func_name, arguments, assert_value, message}.
        """
        calls = [(c.get("env_type", "assistant"), c["func_name"], dict(c.get("arguments") or {})) for c in checks]
        results = runtime.check(_Reader(view.query), calls)
        failed = []
        for c, got in zip(checks, results, strict=True):
            want = c.get("assert_value", True)
            if not isinstance(got, bool):
                raise ValueError(f"{c['func_name']} returned {type(got).__name__}, not a bool")
            if got != want:
                what = c.get("message") or f"{c['func_name']}({_args(c.get('arguments') or {})})"
                failed.append(f"{what}: expected {want}, got {got}")
        if failed:
            return Verdict(False, "; ".join(failed), details={"failed": len(failed), "checks": len(checks)})
        return Verdict(True, f"all {len(checks)} environment assertion(s) hold", details={"checks": len(checks)})

    return check


def _args(arguments: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in arguments.items())


def matches(arguments: Any, wanted: dict[str, Any], compare_args: list[str] | None) -> bool:
    """τ²'s ``Action.compare_with_tool_call`` on the arguments (the names already equal): with
    ``compare_args`` None, every argument the call gives is compared (so a call with none matches)."""
    if not isinstance(arguments, dict):
        return False
    keys = list(arguments) if compare_args is None else compare_args
    if not keys:
        return True
    return ({k: v for k, v in arguments.items() if k in keys}
            == {k: v for k, v in wanted.items() if k in keys})


@grader(kind="trajectory", name="tau2_action")
def tau2_action(view: TrialView, name: str, arguments: dict[str, Any], requestor: str = "assistant",
                compare_args: list[str] | None = None) -> Verdict:
    """A gold action of the task was called by the same side with the compared arguments (τ²'s action check).

    Args:
        name: The tool.
        arguments: The gold arguments.
        requestor: Who must call it: assistant (the agent) or user.
        compare_args: The arguments compared (None: every argument the call gives).
    """
    by = SIDE.get(requestor, requestor)
    want = f"{name}({_args(arguments)}) by the {by}"
    for c in view.calls:
        if c.tool == name and c.by == by and matches(c.arguments, arguments, compare_args):
            return Verdict(True, f"{want}: called at step {c.step}", step=c.step)
    same_name = [c.step for c in view.calls if c.tool == name]
    return Verdict(False, f"{want} was never called" + (f" (other calls of {name} at steps {same_name})" if same_name else ""))
