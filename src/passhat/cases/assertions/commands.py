"""``command_succeeds``: a command run in the final workspace (the project's tests, a build) exits as expected.

A command needs a process, which must not block the event loop other trials share, so the runner runs
the case's commands *before* grading (``graders/files.py``) and the check only reads the result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

from passhat.cases.assertions.base import BuiltinAssertion, GradedSubject
from passhat.cases.assertions.files import final_tree

if TYPE_CHECKING:
    from passhat.graders.base import TrialView

OUTPUT_IN_REASON = 600
"""Characters of a failed command's output quoted in its reason (the whole output is in ``details``)."""


class CommandSucceeds(BuiltinAssertion):
    """A command run in the final workspace exits with ``exit_code`` (default 0) within ``timeout``, e.g.
    ``- command_succeeds: {run: "python -m pytest -q"}``. It runs in the same sandbox as the agent's
    ``run_command`` (no network, scrubbed environment) on the trial's copy, after the agent has finished;
    what it writes is not part of the trial's file changes."""

    subject: ClassVar[GradedSubject] = "state"
    shorthand: ClassVar[str | None] = "run"
    needs_workspace: ClassVar[bool] = True

    kind: Literal["command_succeeds"] = "command_succeeds"
    run: str = Field(min_length=1)
    """The command line, run by /bin/sh in the workspace root."""
    timeout: float = Field(300.0, gt=0, le=3600)
    """Seconds before the command is killed (a killed command fails the check)."""
    exit_code: int = 0
    """The exit status that passes."""

    def check(self, view: TrialView) -> tuple[bool, str]:
        final_tree(view)
        index = next((i for i, b in enumerate(view.case.assertions) if b is self), None)
        result = view.commands.get(index) if index is not None else None
        if result is None:
            raise ValueError(f"the command {self.run!r} was not run on the final workspace")
        how = "" if result.isolation != "none" else " (no sandbox on this machine)"
        if result.timed_out:
            return False, f"`{self.run}` did not finish within {self.timeout:g}s{how}"
        if result.exit_code == self.exit_code:
            return True, f"`{self.run}` exited {result.exit_code}{how}"
        tail = (result.stdout + result.stderr).strip()[-OUTPUT_IN_REASON:]
        return False, f"`{self.run}` exited {result.exit_code}, expected {self.exit_code}{how}:\n{tail}"


KINDS: tuple[type[BuiltinAssertion], ...] = (CommandSucceeds,)
"""This family's kinds, in the order the reference documents them."""
