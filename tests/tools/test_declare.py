"""Tools are declared once; their JSON Schema comes from type hints and the docstring."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from passhat.tools import ToolContext, tool


@tool(kind="write")
def create_ticket(ctx: ToolContext, invoice_id: str, amount: float, urgent: bool = False) -> dict:
    """Create a reimbursement ticket.

    Args:
        invoice_id: The invoice, e.g. "INV-102".
        amount: Amount in CNY.
        urgent: Flag for fast handling.
    """
    return {}


def test_schema_is_generated_from_hints_and_docstring() -> None:
    p = create_ticket.parameters
    assert create_ticket.kind == "write"
    assert create_ticket.description == "Create a reimbursement ticket."
    assert p["type"] == "object" and p["required"] == ["invoice_id", "amount"]
    assert p["properties"]["amount"] == {"type": "number", "description": "Amount in CNY."}
    assert p["properties"]["urgent"]["default"] is False
    assert p["additionalProperties"] is False
    assert create_ticket.openai_spec()["function"]["name"] == "create_ticket"


def test_arguments_are_validated_strictly() -> None:
    model = create_ticket.arguments
    assert model.model_validate({"invoice_id": "INV-1", "amount": 118}).amount == 118
    for bad in ({"invoice_id": "INV-1", "amount": "118.5元"}, {"invoice_id": "INV-1"},
                {"invoice_id": "INV-1", "amount": 1.0, "extra": 1}):
        with pytest.raises(ValidationError):
            model.model_validate(bad)


def test_declaration_errors_are_explicit() -> None:
    with pytest.raises(TypeError, match="docstring"):
        tool(kind="read")(lambda ctx: None)

    def undocumented(ctx: ToolContext, x: int) -> None:
        """Does something."""

    with pytest.raises(TypeError, match="'x' needs a description"):
        tool(kind="read")(undocumented)

    def no_ctx(x: int) -> None:
        """Does something.

        Args:
            x: a number.
        """

    with pytest.raises(TypeError, match="first parameter"):
        tool(kind="read")(no_ctx)
    with pytest.raises(TypeError, match="kind"):
        tool(kind="delete")(no_ctx)  # type: ignore[arg-type]
