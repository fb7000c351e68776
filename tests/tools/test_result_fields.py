"""What a tool declares about its result: the field names a ``malformed`` fault may name before any trial."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic needs it for a TypedDict inside a model, before 3.12

from passhat.tools import ToolBoundary, ToolContext, tool
from passhat.tools.result_fields import declared_fields


class Line(TypedDict):
    sku: str
    qty: int


class Order(TypedDict):
    id: int
    lines: list[Line]
    note: NotRequired[str | None]


class Receipt(BaseModel):
    total: float
    order: Order | None = None


@dataclass
class Point:
    x: float


class Tree(TypedDict):
    name: str
    kids: list[Tree]


def returning(annotation: Any) -> Any:
    def f() -> None: ...
    f.__annotations__ = {"return": annotation}
    return f


@pytest.mark.parametrize(("annotation", "fields"), [
    (Order, {"id", "lines", "note", "sku", "qty"}),  # nested rows count: a fault corrupts the field at any depth
    (list[Receipt], {"total", "order", "id", "lines", "note", "sku", "qty"}),
    (Sequence[Point] | None, {"x"}),
    (dict[Literal["a", "b"], Line], {"a", "b", "sku", "qty"}),
    (Tree, {"name", "kids"}),  # recursive
    (str, set()),
    (int | None, set()),
])
def test_precise_annotations_declare_their_names(annotation: Any, fields: set[str]) -> None:
    assert declared_fields(returning(annotation)) == fields


@pytest.mark.parametrize("annotation", [dict, list, list[dict], dict[str, int], dict[str, Any], Any, "Missing", Order | dict])
def test_open_annotations_declare_nothing(annotation: Any) -> None:
    assert declared_fields(returning(annotation)) is None


def test_no_annotation_declares_nothing() -> None:
    def f(): ...  # type: ignore[no-untyped-def]
    assert declared_fields(f) is None


@tool(kind="read")
def receipt(ctx: ToolContext) -> Receipt:
    """A receipt, as a pydantic model."""
    return Receipt(total=9.5, order={"id": 1, "lines": [{"sku": "A", "qty": 2}]})


def test_a_model_result_reaches_the_agent_as_its_declared_fields(notes_domain: Any) -> None:
    """Declaring a model means the agent gets its fields (not the model's repr), as the declaration says."""
    from passhat.world import World

    world = World.restore(notes_domain.image("default"), 1)
    rec = asyncio.run(ToolBoundary([receipt], ToolContext(world)).call("receipt", {}))
    assert rec.result == {"total": 9.5, "order": {"id": 1, "lines": [{"sku": "A", "qty": 2}]}}
    assert receipt.result_fields == {"total", "order", "id", "lines", "note", "sku", "qty"}
    world.close()


def test_builtin_read_tools_return_what_they_declare() -> None:
    """The built-in domains' declarations are true: a real answer holds exactly the declared fields (a stale
    TypedDict would make the load-time check lie)."""
    from passhat.cases import load_suite
    from passhat.world import World

    # (tool, arguments, identity): None is the back office, which sees every order
    calls = {"refunds": [("get_customer", {}, "C-1001"), ("list_orders", {}, "C-1001"),
                         ("get_order", {"order_id": 4812}, None), ("get_approval", {"order_id": 4812}, None),
                         ("list_refunds", {"order_id": 4860}, None), ("list_emails", {"order_id": 4812}, None)],
             "reimbursement": [("get_employee", {}, "E-1001"), ("query_invoices", {}, "E-1001"),
                               ("query_tickets", {}, "E-1001"), ("search_policy", {"query": "taxi"}, "E-1001")]}
    for name, tried in calls.items():
        domain = load_suite(name).domains[name]
        world = World.restore(domain.image("default"), 1)
        ctx = ToolContext(world)
        boundary = ToolBoundary(domain.tool_list(), ctx)
        for tool_name, args, identity in tried:
            ctx.identity = identity
            rec = asyncio.run(boundary.call(tool_name, args))
            assert rec.ok, (tool_name, rec.error)
            rows = rec.result if isinstance(rec.result, list) else [rec.result]
            assert rows, f"{tool_name} returned nothing to compare"
            declared = domain.tools[tool_name].result_fields
            assert declared is not None, tool_name
            for row in rows:  # the built-in declarations are flat: the names of one row are all of them
                assert set(row) == declared, (tool_name, set(row) ^ declared)
        world.close()
