"""An assertion that names a grader the case's domain registers (``graders/declare.py``).

Its key is the grader's name and its fields are the grader's parameters; whether the domain has the
grader, and whether the parameters fit it, is checked when the suite loads (``cases/load.py``), and the
grader of its kind grades it (``graders/custom.py``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.cases.assertions.base import GRADER_NAME
from passhat.cases.assertions.fixture import Fixture
from passhat.cases.assertions.registry import ASSERTION_KINDS

CUSTOM = "custom"
"""The tag (in validation errors: ``assertions.N.custom``) of an assertion that names a domain's grader."""


class CustomAssertion(BaseModel):
    """An assertion graded by a grader the case's domain registers (see graders.md). Its key is the
    grader's name and its fields are the grader's parameters, e.g. ``- refund_matches_approval:
    {order_id: "4812"}`` (no parameters: ``- no_double_refund``). The name must be a grader of the domain
    and the parameters must fit its signature: both are checked when the suite loads, before any trial."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)

    kind: str
    """The grader's name (the assertion's key in a case file)."""
    description: str | None = None
    """Optional human wording of what the assertion checks, shown in reasons."""
    required: bool = True
    """Whether a failed check fails the trial (``false``: recorded only)."""

    @field_validator("kind")
    @classmethod
    def _grader_name(cls, value: str) -> str:
        if not GRADER_NAME.match(value):
            raise ValueError(f"{value!r} is not a built-in assertion ({', '.join(ASSERTION_KINDS)}) nor a grader name "
                             "(letters, digits and _)")
        return value

    @property
    def params(self) -> dict[str, Any]:
        """The grader's parameters as written in the case."""
        return dict(self.model_extra or {})

    def label(self) -> str:
        """The grade's name: ``grader: description`` when the case words it, else ``grader(param=value, ...)``."""
        if self.description:
            return f"{self.kind}: {self.description}"
        return f"{self.kind}({', '.join(f'{k}={v!r}' for k, v in self.params.items())})"

    def check_fixture(self, field: str, fixture: Fixture) -> None:
        """Nothing to check against the fixture: the fields are the grader's parameters (a ``table`` may be
        anything), checked against its signature instead (``cases/load.py``)."""

    def check_workspace(self, field: str, file: str, has_workspace: bool) -> None:
        """Nothing: the grader reads what it needs from the trial."""
