"""Gold and perturbed action sequences of τ-bench tasks: for checking that an imported suite's verdicts
agree with τ-bench's own reward.

A :class:`Script` is what an agent does in one trial: tool calls and messages to the user, in order. The
same script can be played on τ-bench's ``Env`` (``respond`` actions for the messages) and on the imported
suite (``episode.call`` / ``episode.say``), so the two verdicts can be compared trial by trial
(``bench/bench_tau_agreement.py`` does, on a real checkout; ``tests/tau_bench/test_tau_perturb.py`` on a
small fixture with a stand-in for τ-bench's reward).

Each perturbation changes the gold script in one way; which reward τ-bench gives depends on the task
(an extra write that only returns ``Error: …`` changes nothing, so it still passes). A perturbation that
does not apply to a task (no write to skip, no outputs to drop) is left out for that task.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from passhat.tau_bench.checkout import Task

Perturbation = Literal[
    "gold", "write_skipped", "argument_changed", "extra_write", "repeated_write", "write_after_transfer",
    "outputs_missing", "outputs_reformatted", "output_in_longer_number", "unknown_tool", "repeated_read",
]
PERTURBATIONS: tuple[Perturbation, ...] = (
    "gold", "write_skipped", "argument_changed", "extra_write", "repeated_write", "write_after_transfer",
    "outputs_missing", "outputs_reformatted", "output_in_longer_number", "unknown_tool", "repeated_read",
)
"""Every perturbation, in the order reports list them:

- ``gold``: the task's actions, then a message giving its outputs;
- ``write_skipped``: the first write left out;
- ``argument_changed``: one argument of the first write changed (another enum value, a list one shorter,
  a number plus one, a string with a character added);
- ``extra_write``: the first write of the next task with writes, made after the gold actions;
- ``repeated_write``: the last write made a second time;
- ``write_after_transfer``: a hand-off to a human, then the extra write (τ-bench's episode has ended);
- ``outputs_missing``: the message without the outputs;
- ``outputs_reformatted``: the outputs as a person might write them (``$8,276.23``, ``10.0``, capitals);
- ``output_in_longer_number``: each numeric output inside a longer number (``18276.23``);
- ``unknown_tool``: an extra call to a tool the environment does not have;
- ``repeated_read``: a read made three times in a row.
"""
UNKNOWN_TOOL = "lookup_everything"
GOODBYE = "Is there anything else I can help you with?"
_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")


@dataclass(frozen=True)
class Step:
    """One thing the agent does: a tool call (``tool`` and ``args``) or a message (``say``)."""

    tool: str | None = None
    args: Mapping[str, Any] | None = None
    say: str | None = None


@dataclass(frozen=True)
class Script:
    """What an agent does in one trial, in order."""

    steps: tuple[Step, ...]

    def to_json(self) -> list[dict[str, Any]]:
        return [{"say": s.say} if s.say is not None else {"tool": s.tool, "args": dict(s.args or {})}
                for s in self.steps]


@dataclass(frozen=True)
class Tools:
    """What the perturbations need to know about an environment's tools."""

    writes: frozenset[str]
    ending: frozenset[str]
    enums: Mapping[str, Mapping[str, Sequence[Any]]]
    """Per tool, the parameters that list their allowed values (``reason: [no longer needed, …]``)."""

    @classmethod
    def of(cls, schemas: Mapping[str, Mapping[str, Any]], writes: set[str], ending: set[str]) -> Tools:
        """From each tool's parameter schema (τ-bench's ``get_info()['function']['parameters']``)."""
        enums = {name: {p: spec["enum"] for p, spec in (schema.get("properties") or {}).items()
                        if isinstance(spec, dict) and isinstance(spec.get("enum"), list)}
                 for name, schema in schemas.items()}
        return cls(frozenset(writes), frozenset(ending), enums)


def _calls(task: Task) -> list[Step]:
    return [Step(tool=a.name, args=dict(a.kwargs)) for a in task.actions]


def _finish(calls: list[Step], message: str, ending: frozenset[str]) -> Script:
    """The calls and the message; the message goes before a final hand-off (nobody listens after it)."""
    if calls and calls[-1].tool in ending:
        return Script((*calls[:-1], Step(say=message), calls[-1]))
    return Script((*calls, Step(say=message)))


def _message(outputs: Sequence[str]) -> str:
    return " ".join(["Done.", *outputs, GOODBYE]) if outputs else f"Done. {GOODBYE}"


def _reformat(output: str) -> str:
    if _NUMBER.match(output):
        whole, _, fraction = output.partition(".")
        grouped = f"{int(whole):,}"
        return f"${grouped}.{fraction}" if fraction else f"{grouped}.0"
    return output.upper()


def _changed(value: Any, allowed: Sequence[Any] | None) -> Any:
    if allowed is not None and value in allowed and len(allowed) > 1:
        return next(v for v in allowed if v != value)
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, list):
        return value[:-1] if len(value) > 1 else [*value, *value]
    if isinstance(value, str):
        return value + "0"
    return value


def _change_argument(call: Step, tools: Tools) -> Step:
    """One argument of ``call`` changed: an enum parameter if it has one, else the last argument."""
    args = dict(call.args or {})
    enums = tools.enums.get(str(call.tool), {})
    name = next((p for p in args if p in enums), None) or (list(args)[-1] if args else None)
    if name is not None:
        args[name] = _changed(args[name], enums.get(name))
    return Step(tool=call.tool, args=args)


def perturbed(task: Task, next_write: Step | None, tools: Tools) -> dict[Perturbation, Script]:
    """The gold script of ``task`` and each perturbation that applies to it.

    ``next_write`` is a write of another task (the first write of the next task that has one), used as
    the extra write: on the initial data it usually succeeds and changes something.
    """
    calls = _calls(task)
    writes = [i for i, c in enumerate(calls) if c.tool in tools.writes and c.tool not in tools.ending]
    reads = [i for i, c in enumerate(calls) if c.tool not in tools.writes and c.tool not in tools.ending]
    message = _message(task.outputs)
    body = [c for c in calls if c.tool not in tools.ending]  # the calls before any hand-off
    out: dict[Perturbation, Script] = {"gold": _finish(calls, message, tools.ending)}
    if writes:
        first = writes[0]
        out["write_skipped"] = _finish(calls[:first] + calls[first + 1:], message, tools.ending)
        changed = _change_argument(calls[first], tools)
        if changed != calls[first]:
            out["argument_changed"] = _finish([*calls[:first], changed, *calls[first + 1:]], message, tools.ending)
        last = calls[writes[-1]]
        out["repeated_write"] = _finish([*body, last, *calls[len(body):]], message, tools.ending)
    if next_write is not None:
        out["extra_write"] = _finish([*body, next_write, *calls[len(body):]], message, tools.ending)
        if tools.ending:
            hand_off = Step(tool=sorted(tools.ending)[0], args={"summary": "The user asks for a human agent."})
            out["write_after_transfer"] = Script((*body, Step(say=message), hand_off, next_write))
    if task.outputs:
        out["outputs_missing"] = _finish(calls, _message([]), tools.ending)
        out["outputs_reformatted"] = _finish(calls, _message([_reformat(o) for o in task.outputs]), tools.ending)
        numbers = [o for o in task.outputs if _NUMBER.match(o)]
        if numbers:
            longer = [f"1{o}" if o in numbers else o for o in task.outputs]
            out["output_in_longer_number"] = _finish(calls, _message(longer), tools.ending)
    out["unknown_tool"] = _finish([Step(tool=UNKNOWN_TOOL, args={}), *calls], message, tools.ending)
    if reads:
        read = calls[reads[0]]
        out["repeated_read"] = _finish([*calls[:reads[0]], read, read, *calls[reads[0]:]], message, tools.ending)
    return out


def scripts(tasks: Sequence[Task], tools: Tools) -> list[dict[Perturbation, Script]]:
    """:func:`perturbed` for every task of a task file, each with the next task's first write as its extra."""
    firsts = [next((Step(tool=a.name, args=dict(a.kwargs)) for a in t.actions
                    if a.name in tools.writes and a.name not in tools.ending), None) for t in tasks]
    out = []
    for i, task in enumerate(tasks):
        others = [firsts[(i + j) % len(tasks)] for j in range(1, len(tasks))]
        out.append(perturbed(task, next((w for w in others if w is not None), None), tools))
    return out


def scripted_agent(script: Script) -> Any:
    """An agent that plays ``script``: each call through the episode, each message to the user, then a goodbye."""
    async def agent(episode: Any) -> str:
        for step in script.steps:
            if step.say is not None:
                await episode.say(step.say)
            else:
                await episode.call(str(step.tool), dict(step.args or {}))
        return "Goodbye."

    return agent


__all__ = ["PERTURBATIONS", "Perturbation", "Script", "Step", "Tools", "perturbed", "scripted_agent", "scripts"]
