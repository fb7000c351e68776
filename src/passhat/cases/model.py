"""A case: one task as data, written before the run and never edited after it.

Field docstrings here are the case-file reference (``docs/case-file.md`` is generated from them).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.cases.assertions import Assertion, expand_assertion
from passhat.cases.rubric import JudgeSpec
from passhat.tools.faults import Fault

Split = Literal["dev", "holdout", "regression"]
Caller = Literal["agent", "user"]
"""Who makes a tool call: the agent, or the user with a tool of the user's own (dual control)."""
DEFAULT_OPENER = "Hi, I need some help."
"""What the user opens with when a case gives ``user.goal`` and no ``instruction``: the agent has to ask."""


class UserTurn(BaseModel):
    """A scripted user message."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    say: str
    """What the user says."""
    when: str | None = None
    """Regular expression (case-insensitive) the agent's message must match for this turn to be used;
    without it, the turn is used on the agent's next message."""


class UserSpec(BaseModel):
    """The simulated user: who they are, what they know, and what they will say."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    identity: str | None = None
    """Who the agent acts for (e.g. an employee or customer id). Tools scope data access to it."""
    persona: str = ""
    """Free text describing the user, for model-played users and for readers."""
    goal: str | None = Field(None, min_length=1)
    """The user's private brief: what they actually want, in their words. The agent never sees it; the
    user reveals it through their own messages (the scripted user says it when the agent asks what they
    want — "how can I help?", "what do you need?"; the model-played user works towards it, a little at a
    time). Details to give only when asked belong in ``facts``."""
    facts: dict[str, Any] = Field(default_factory=dict)
    """What the user knows and will tell when asked (a fact is given when the agent's message mentions
    its name, with ``_`` read as a space)."""
    turns: list[UserTurn] = Field(default_factory=list)
    """Scripted messages, used in order."""
    max_turns: int = Field(10, ge=0)
    """The user leaves after this many replies."""


class RequiredCall(BaseModel):
    """A tool that must be called successfully at least once, optionally with given arguments.

    A required call no trial could make is refused when the suite loads: a tool the case forbids or leaves out
    of ``allowed_tools``, an argument the tool does not take, or a value of a type its parameter refuses
    (``book_id: 10`` for a string parameter)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    tool: str
    """Tool name."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Argument values the call must have (a subset; numbers by value)."""


class ReferenceCall(BaseModel):
    """One call of the case's reference solution, run as written (no faults) on a fresh world."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    tool: str
    """Tool name."""
    args: dict[str, Any] = Field(default_factory=dict)
    """The call's arguments, exactly as the tool takes them."""
    by: Caller = "agent"
    """Who makes the call: ``agent``, or ``user`` for a tool of the user's own (a domain's ``user_tools``,
    e.g. the user's phone settings in τ²-bench telecom)."""
    fails: bool = False
    """The call is expected to fail (the tool refuses it: a user not found), and the reference goes on, as
    τ²-bench's gold actions do; a failed call changes nothing. Checked when the suite loads: a call marked
    ``fails`` that succeeds is an error, like an unmarked call that fails."""


class OrderConstraint(BaseModel):
    """A real dependency: every successful call of ``then`` must come after a successful call of ``first``.

    Declare order only where it matters (check before a write); independent reads may come in any order.
    A rule on a tool the case forbids or leaves out of ``allowed_tools`` is refused when the suite loads: it
    could never check an order.
    """

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    first: str
    """The call that must happen first (e.g. a read that checks state)."""
    then: str
    """The call that depends on it (e.g. the write)."""
    reason: str = ""
    """Why the order matters, shown when it is violated."""


class Limits(BaseModel):
    """Budgets for one trial; exceeding one fails the trial. Budgets are finite numbers (``.inf`` and
    ``.nan`` are refused; leave ``max_cost`` out for no cost budget)."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True, allow_inf_nan=False)
    max_steps: int = Field(30, ge=1)
    """Maximum tool calls."""
    max_seconds: float = Field(60.0, gt=0)
    """Wall-clock time for the agent; a hung agent is stopped here."""
    max_cost: float | None = Field(None, ge=0)
    """Maximum reported cost (currency of the price table)."""
    max_tool_errors: int | None = Field(None, ge=1)
    """End the trial, failed (``error_limit``), once this many tool calls have failed — the agent's and
    the user's (τ²-bench stops at 10); default: no limit."""


class Rules(BaseModel):
    """Process rules checked on the trajectory."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    loop_threshold: int = Field(3, ge=2)
    """The same tool with the same arguments this many times is a loop."""
    loops_fail: bool = True
    """A loop fails the trial; ``false``: it is recorded (grade ``no_loop``) but does not fail it
    (τ-bench imports: its reward does not look at repetition)."""
    unknown_tools_fail: bool = True
    """A call to a tool the domain does not have fails the trial; ``false``: recorded (grade
    ``no_unknown_tools``), not failed (τ-bench imports: τ-bench answers such a call with an error)."""
    denied_calls_fail: bool = True
    """An attempt the tool layer denied (permission, forbidden, not allowed) fails the trial."""
    max_invalid_arguments: int | None = Field(None, ge=0)
    """Fail when more calls than this had invalid arguments (default: recorded, not failed)."""


class Case(BaseModel):
    """One task: initial state, input, acceptance."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)
    id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
    """Unique within the suite; letters, digits, ``-``, ``_`` and ``.``."""
    domain: str
    """Built-in domain name, ``package.module:attr``, or a ``.py`` path relative to the folder of case files
    (``../domain.py``)."""
    fixture: str = "default"
    """Named initial state of the domain."""
    instruction: str = Field(None, validate_default=True)
    """The user's opening message: the first thing the agent is told. Required unless ``user.goal`` is
    given; then it may be left out and the user opens with "Hi, I need some help." (the agent must ask)."""
    description: str = ""
    """What the case tests and why, for people."""
    user: UserSpec = Field(default_factory=UserSpec)
    """The simulated user (see ``user``)."""
    allowed_tools: list[str] | None = None
    """If set, only these tools may be called; other calls are denied at the tool layer."""
    forbidden_tools: list[str] = Field(default_factory=list)
    """Tools that must not be called; calls are denied and fail the trial."""
    required_tools: list[RequiredCall] = Field(default_factory=list)
    """Calls that must succeed at least once. A bare tool name is allowed."""
    order: list[OrderConstraint] = Field(default_factory=list)
    """Ordering dependencies between calls, only where one really exists."""
    faults: list[Fault] = Field(default_factory=list)
    """Planned failures at the tool boundary."""
    assertions: list[Assertion] = Field(default_factory=list)
    """Checks on the final state and the reply; every one must pass."""
    reference: list[ReferenceCall] = Field(default_factory=list)
    """A reference solution: tool calls (a bare tool name for one without arguments) run in order, once per
    case, on a fresh world of the fixture as the user's identity. Every call must succeed, unless marked ``fails``
    (checked when the suite loads); its row changes are the expected state of ``expect_state: reference``."""
    limits: Limits = Field(default_factory=Limits)
    """Budgets for one trial."""
    rules: Rules = Field(default_factory=Rules)
    """Process rules on the trajectory."""
    judge: JudgeSpec | None = None
    """Optional LLM-judge rubric for what code cannot check (see ``judge``); needs ``--judge MODEL`` at run time."""
    tags: dict[str, str] = Field(default_factory=dict)
    """Strata for reports, e.g. ``{scenario: fault, risk: high}``."""
    group: str | None = None
    """Family of cases that share a template (resampled together; kept in one split)."""
    split: Split = "dev"
    """``dev`` (tuning), ``holdout`` (acceptance) or ``regression`` (past failures kept)."""

    @model_validator(mode="before")
    @classmethod
    def _default_opener(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("instruction") is None:
            user = data.get("user")
            goal = user.get("goal") if isinstance(user, dict) else getattr(user, "goal", None)
            if goal is not None:
                return {**data, "instruction": DEFAULT_OPENER}
        return data

    @field_validator("instruction", mode="before")
    @classmethod
    def _instruction_given(cls, value: Any) -> Any:
        if value is None:
            raise PydanticCustomError(
                "missing", "required: the user's opening message (it may be left out only when user.goal is given)")
        return value

    @field_validator("required_tools", "reference", mode="before")
    @classmethod
    def _bare_names(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"tool": v} if isinstance(v, str) else v for v in value]
        return value

    @field_validator("assertions", mode="before")
    @classmethod
    def _expand(cls, value: Any) -> Any:
        return [expand_assertion(v) for v in value] if isinstance(value, list) else value

    @field_validator("tags", mode="before")
    @classmethod
    def _tag_values(cls, value: Any) -> Any:
        if isinstance(value, list):
            return {str(v): "yes" for v in value}
        if isinstance(value, dict):
            return {str(k): str(v) for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Case:
        both = set(self.forbidden_tools) & set(self.allowed_tools or [])
        if both:
            raise ValueError(f"tools both allowed and forbidden: {sorted(both)}")
        return self

    def content_hash(self) -> str:
        """Hash of the case's content; two runs measured the same case only if it is equal."""
        data = self.model_dump(mode="json")
        if data.get("judge") is None:  # cases without a judge hash as they did before the field existed
            data.pop("judge", None)
        if data["user"].get("goal") is None:  # likewise cases without a hidden goal
            data["user"].pop("goal", None)
        for a in data["assertions"]:  # and reply checks without normalisation
            if a.get("kind") in ("reply_contains", "reply_not_contains") and a.get("normalize") == []:
                del a["normalize"]
            if a.get("required") is True:  # and assertions that decide the outcome, as they all once did
                del a["required"]
        if not data.get("reference"):  # likewise cases without a reference, and row scopes without columns
            data.pop("reference", None)
        for call in data.get("reference", []):  # and reference calls by the agent that must succeed
            if call.get("by") == "agent":
                del call["by"]
            if call.get("fails") is False:
                del call["fails"]
        for a in data.get("assertions", []):
            if a.get("kind") == "unchanged_except" and a.get("files") == []:  # and scopes without files
                del a["files"]
            for scope in a.get("rows", []) if a.get("kind") == "unchanged_except" else []:
                if scope.get("columns") is None:
                    scope.pop("columns", None)
        if data["limits"].get("max_tool_errors") is None:  # cases without an error budget hash as before
            del data["limits"]["max_tool_errors"]
        for switch in ("loops_fail", "unknown_tools_fail"):  # and rules whose vetoes are on, as they always were
            if data["rules"].get(switch) is True:
                del data["rules"][switch]
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
