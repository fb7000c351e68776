"""Custom graders declared once: a typed Python function, registered on its domain, named from case files.

Like a tool, a grader is a function whose signature is the single source of truth: its parameters
(after the trial ``view``, and the ``judge`` for model-based graders) become a pydantic model, and the
parameters a case gives are validated against it when the suite loads. ``kind`` says what the grader
judges, which decides where its grades go (``Grade.grader``) and how a failure is attributed:

- ``state``: the final state (attributed as ``wrong_final_state``);
- ``trajectory``: the tool calls (``skipped_verification``);
- ``reply``: what the agent told the user (``missing_information_in_reply``);
- ``judge``: anything, by asking the run's judge model (``judge_failure``). Judge graders are ``async``
  and receive the judge as ``judge``; the others are plain functions, so re-grading a stored run needs
  no event loop and no model.

See docs/graders.md for the whole contract.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Literal, ParamSpec, TypeVar, get_type_hints, overload

import docstring_parser
from pydantic import BaseModel, ConfigDict, Field, create_model

from passhat.cases.assertions import ASSERTION_KINDS, GRADER_NAME

P = ParamSpec("P")
R = TypeVar("R")
GraderKind = Literal["state", "trajectory", "reply", "judge"]
KINDS: tuple[GraderKind, ...] = ("state", "trajectory", "reply", "judge")
RESERVED = ("kind", "description", "required")
"""Fields every assertion has, so no grader parameter may take these names."""


@dataclass(frozen=True)
class CustomGrader(Generic[P, R]):
    """A declared grader: its function, parameter model and metadata. ``CustomGrader[P, R]`` keeps the
    function's type: calling the grader calls the function (a grader's own unit test), type-checked as it."""

    name: str
    kind: GraderKind
    description: str
    func: Callable[P, R]
    params: type[BaseModel]
    """The parameters a case gives, as a model (extra fields are refused)."""

    @property
    def uses_judge(self) -> bool:
        return self.kind == "judge"

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        """The function itself, with no parameter check or fail-closed wrapping: for tests."""
        return self.func(*args, **kwargs)

    def signature(self) -> str:
        """``name(param: type = default, ...)`` for messages and docs."""
        parts = []
        for pname, info in self.params.model_fields.items():
            annotation = getattr(info.annotation, "__name__", None) or str(info.annotation).replace("typing.", "")
            parts.append(f"{pname}: {annotation}" + ("" if info.is_required() else f" = {info.default!r}"))
        return f"{self.name}({', '.join(parts)})"


def _param_model(func: Callable[..., Any], name: str, kind: GraderKind, doc: docstring_parser.Docstring) -> type[BaseModel]:
    params = list(inspect.signature(func).parameters.values())
    if not params or params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
        raise TypeError(f"grader {name!r}: the first parameter must be the trial view, e.g. `def {name}(view, ...)`")
    rest = params[1:]
    if kind == "judge":
        if not any(p.name == "judge" for p in rest):
            raise TypeError(f"grader {name!r}: a judge grader takes the judge model as a parameter named `judge`")
        rest = [p for p in rest if p.name != "judge"]
    try:
        hints = get_type_hints(func)
    except Exception as exc:  # a hint naming something not importable at run time
        raise TypeError(f"grader {name!r}: cannot resolve its type hints: {exc}") from None
    described = {p.arg_name: (p.description or "") for p in doc.params}
    fields: dict[str, Any] = {}
    for p in rest:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise TypeError(f"grader {name!r}: *args/**kwargs cannot be checked against a case; name each parameter")
        if p.kind == p.POSITIONAL_ONLY:
            raise TypeError(f"grader {name!r}: parameter {p.name!r} is positional-only; parameters are passed by name")
        if p.name in RESERVED:
            raise TypeError(f"grader {name!r}: {p.name!r} is a field of every assertion; call the parameter something else")
        if p.name not in hints:
            raise TypeError(f"grader {name!r}: parameter {p.name!r} needs a type hint (cases are validated against it)")
        default = ... if p.default is p.empty else p.default
        fields[p.name] = (hints[p.name], Field(default, description=described.get(p.name) or None))
    return create_model(f"{name}_params", __config__=ConfigDict(extra="forbid"), **fields)


@overload
def grader(func: Callable[P, R], *, kind: GraderKind, name: str | None = None) -> CustomGrader[P, R]: ...


@overload
def grader(func: None = None, *, kind: GraderKind,
           name: str | None = None) -> Callable[[Callable[P, R]], CustomGrader[P, R]]: ...


def grader(
    func: Callable[P, R] | None = None,
    *,
    kind: GraderKind,
    name: str | None = None,
) -> CustomGrader[P, R] | Callable[[Callable[P, R]], CustomGrader[P, R]]:
    """Declare a grader. Use as ``@grader(kind="state")`` and register it with ``Domain(..., graders=[...])``.

    The function's first parameter receives the :class:`~passhat.graders.TrialView`; a ``judge`` grader
    is ``async`` and also receives ``judge`` (a :class:`~passhat.graders.custom.TrialJudge`). Every other
    parameter needs a type hint: it is what a case passes, validated when the suite loads. The function
    returns ``bool``, ``(bool, reason)``, a :class:`~passhat.graders.Verdict` or a
    :class:`~passhat.graders.Grade`; anything else, or an exception, fails the grade with the reason. The
    docstring says what it checks.
    """

    def wrap(f: Callable[P, R]) -> CustomGrader[P, R]:
        grader_name = name or f.__name__
        if not GRADER_NAME.match(grader_name):
            raise TypeError(f"grader {grader_name!r}: a grader name is letters, digits and _ (it is a key in case files)")
        if grader_name in ASSERTION_KINDS:
            raise TypeError(f"grader {grader_name!r}: that is a built-in assertion; choose another name")
        if kind not in KINDS:
            raise TypeError(f"grader {grader_name!r}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if kind == "judge" and not inspect.iscoroutinefunction(f):
            raise TypeError(f"grader {grader_name!r}: a judge grader asks a model, so it is `async def`")
        if kind != "judge" and inspect.iscoroutinefunction(f):
            raise TypeError(f"grader {grader_name!r}: only judge graders are async (a {kind} grader reads the trial "
                            "and returns; use kind='judge' to ask a model)")
        doc = docstring_parser.parse(inspect.getdoc(f) or "")
        description = "\n\n".join(x for x in (doc.short_description, doc.long_description) if x)
        if not description:
            raise TypeError(f"grader {grader_name!r}: a docstring saying what it checks is required")
        return CustomGrader(grader_name, kind, description, f, _param_model(f, grader_name, kind, doc))

    return wrap(func) if func is not None else wrap
