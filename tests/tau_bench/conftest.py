"""A small checkout in τ-bench's layout, written fresh for each test (nothing of τ-bench is shipped).

``tau_bench/__init__.py`` and each environment's ``__init__.py`` import things passhat's environment does
not have (as τ-bench's import its user simulator and LLM clients): the import must never run them.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

TOOL_BASE = '''
import abc
from typing import Any


class Tool(abc.ABC):
    @staticmethod
    def invoke(*args, **kwargs):
        raise NotImplementedError

    @staticmethod
    def get_info() -> dict[str, Any]:
        raise NotImplementedError
'''


def tool_file(cls: str, name: str, description: str, params: dict, body: str) -> str:
    """A τ-bench-style tool module: a class with ``invoke(data, **kwargs)`` and ``get_info()``."""
    args = "".join(f", {p}" for p in params)
    info = {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": params, "required": list(params)}}}
    return (f"import json\nfrom typing import Any, Dict\nfrom tau_bench.envs.tool import Tool\n\n\n"
            f"class {cls}(Tool):\n    @staticmethod\n    def invoke(data: Dict[str, Any]{args}) -> str:\n"
            + textwrap.indent(textwrap.dedent(body).strip(), " " * 8)
            + f"\n\n    @staticmethod\n    def get_info() -> Dict[str, Any]:\n        return {info!r}\n")


RETAIL_TOOLS = {
    "find_user_id_by_email": ("FindUserIdByEmail", "Find a user id by email.", {"email": {"type": "string"}}, """
        for user_id, profile in data["users"].items():
            if profile["email"].lower() == email.lower():
                return user_id
        return "Error: user not found"
    """),
    "get_order_details": ("GetOrderDetails", "Get the status and details of an order.",
                          {"order_id": {"type": "string", "description": "Such as '#W0000001'."}}, """
        orders = data["orders"]
        if order_id in orders:
            return json.dumps(orders[order_id])
        return "Error: order not found"
    """),
    "cancel_pending_order": ("CancelPendingOrder", "Cancel a pending order; gift card payments are refunded at once.",
                             {"order_id": {"type": "string"},
                              "reason": {"type": "string", "enum": ["no longer needed", "ordered by mistake"]}}, """
        orders = data["orders"]
        if order_id not in orders:
            return "Error: order not found"
        order = orders[order_id]
        if order["status"] != "pending":
            return "Error: non-pending order cannot be cancelled"
        if reason not in ("no longer needed", "ordered by mistake"):
            return "Error: invalid reason"
        refunds = []
        for payment in order["payment_history"]:
            refunds.append({"transaction_type": "refund", "amount": payment["amount"],
                            "payment_method_id": payment["payment_method_id"]})
            if payment["payment_method_id"].startswith("gift_card"):
                method = data["users"][order["user_id"]]["payment_methods"][payment["payment_method_id"]]
                method["balance"] = round(method["balance"] + payment["amount"], 2)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return json.dumps(order)
    """),
    "transfer_to_human_agents": ("TransferToHumanAgents", "Transfer the user to a human agent.",
                                 {"summary": {"type": "string"}}, """
        return "Transfer successful"
    """),
}
RETAIL_DATA = {
    "users": {
        "noah_brown_1234": {"name": {"first_name": "Noah", "last_name": "Brown"}, "email": "noah.brown1234@example.com",
                            "payment_methods": {"gift_card_1111": {"source": "gift_card", "balance": 20.5},
                                                "credit_card_2222": {"source": "credit_card", "last_four": "4242"}},
                            "orders": ["#W0000001", "#W0000002", "#W0000003"]},
        "ava_lee_5678": {"name": {"first_name": "Ava", "last_name": "Lee"}, "email": "ava.lee5678@example.com",
                         "phone": "415 5550 1234",
                         "payment_methods": {"paypal_3333": {"source": "paypal"}}, "orders": ["#W0000004"]},
    },
    "orders": {
        "#W0000001": {"order_id": "#W0000001", "user_id": "noah_brown_1234", "status": "pending",
                      "items": [{"name": "Desk Lamp", "item_id": "1001", "price": 54.04}],
                      "payment_history": [{"transaction_type": "payment", "amount": 54.04,
                                           "payment_method_id": "gift_card_1111"}]},
        "#W0000002": {"order_id": "#W0000002", "user_id": "noah_brown_1234", "status": "delivered",
                      "items": [{"name": "Water Bottle", "item_id": "1002", "price": 128.5}],
                      "payment_history": [{"transaction_type": "payment", "amount": 128.5,
                                           "payment_method_id": "credit_card_2222"}]},
        "#W0000003": {"order_id": "#W0000003", "user_id": "noah_brown_1234", "status": "pending",
                      "items": [{"name": "Notebook", "item_id": "1003", "price": 12}],
                      "payment_history": [{"transaction_type": "payment", "amount": 12,
                                           "payment_method_id": "credit_card_2222"}]},
        "#W0000004": {"order_id": "#W0000004", "user_id": "ava_lee_5678", "status": "pending",
                      "items": [{"name": "Mug", "item_id": "1004", "price": 9.99}],
                      "payment_history": [{"transaction_type": "payment", "amount": 9.99,
                                           "payment_method_id": "paypal_3333"}]},
    },
    "products": {"p1": {"name": "Desk Lamp", "product_id": "p1",
                        "variants": {"1001": {"available": True, "price": 54.04}}}},
}
RETAIL_TASKS = '''
from tau_bench.types import Action, Task

TASKS_TEST = [
    Task(
        annotator="0",
        user_id="noah_brown_1234",
        instruction="You are Noah Brown (noah.brown1234@example.com). Cancel the desk lamp order: no longer needed.",
        actions=[
            Action(name="find_user_id_by_email", kwargs={"email": "noah.brown1234@example.com"}),
            Action(name="get_order_details", kwargs={"order_id": "#W0000001"}),
            Action(name="cancel_pending_order", kwargs={"order_id": "#W0000001", "reason": "no longer needed"}),
        ],
        outputs=[],
    ),
    Task(
        annotator="0",
        user_id="noah_brown_1234",
        instruction="You are Noah Brown. You want to know how much you paid for order #W0000002.",
        actions=[Action(name="get_order_details", kwargs={"order_id": "#W0000002"})],
        outputs=["128.5"],
    ),
    Task(
        annotator="0",
        user_id="ava_lee_5678",
        instruction="You are Ava Lee. You want a human to look at your order #W0000004; insist on a human.",
        actions=[
            Action(name="get_order_details", kwargs={"order_id": "#W0000004"}),
            Action(name="transfer_to_human_agents", kwargs={"summary": "The user asks for a human agent."}),
        ],
        outputs=[],
    ),
]
'''
AIRLINE_TOOLS = {
    "get_reservation_details": ("GetReservationDetails", "Get the details of a reservation.",
                                {"reservation_id": {"type": "string"}}, """
        reservations = data["reservations"]
        if reservation_id in reservations:
            return json.dumps(reservations[reservation_id])
        return "Error: reservation not found"
    """),
    "update_reservation_baggages": ("UpdateReservationBaggages", "Update the baggage of a reservation.",
                                    {"reservation_id": {"type": "string"}, "total_baggages": {"type": "integer"},
                                     "nonfree_baggages": {"type": "integer"}, "payment_id": {"type": "string"}}, """
        reservation = data["reservations"].get(reservation_id)
        if reservation is None:
            return "Error: reservation not found"
        user = data["users"][reservation["user_id"]]
        if payment_id not in user["payment_methods"]:
            return "Error: payment method not found"
        extra = 50 * max(0, nonfree_baggages - reservation["nonfree_baggages"])
        reservation["total_baggages"] = total_baggages
        reservation["nonfree_baggages"] = nonfree_baggages
        if extra:
            reservation["payment_history"].append({"payment_id": payment_id, "amount": extra})
        return json.dumps(reservation)
    """),
    "transfer_to_human_agents": RETAIL_TOOLS["transfer_to_human_agents"],
}
AIRLINE_DATA = {
    "flights": {"HAT001": {"flight_number": "HAT001", "origin": "SFO", "destination": "JFK",
                           "dates": {"2024-05-16": {"status": "available", "available_seats": {"economy": 3}}}}},
    "reservations": {"ZFA04Y": {"reservation_id": "ZFA04Y", "user_id": "mia_li_3668", "insurance": "no",
                                "flights": [{"flight_number": "HAT001", "date": "2024-05-16"}],
                                "total_baggages": 1, "nonfree_baggages": 0,
                                "payment_history": [{"payment_id": "credit_card_4421", "amount": 120}]}},
    "users": {"mia_li_3668": {"name": {"first_name": "Mia", "last_name": "Li"},
                              "payment_methods": {"credit_card_4421": {"source": "credit_card"}},
                              "reservations": ["ZFA04Y"], "membership": "gold", "nickname": None}},
}
AIRLINE_TASKS = '''
from tau_bench.types import Action, Task

TASKS = [
    Task(
        user_id="mia_li_3668",
        instruction="You are Mia Li. Add two checked bags to reservation ZFA04Y, one of them paid, with your card.",
        actions=[
            Action(name="get_reservation_details", kwargs={"reservation_id": "ZFA04Y"}),
            Action(name="update_reservation_baggages", kwargs={"reservation_id": "ZFA04Y", "total_baggages": 3,
                                                                "nonfree_baggages": 1, "payment_id": "credit_card_4421"}),
        ],
        outputs=[],
    ),
]
'''


def write_env(root: Path, env: str, tools: dict, data: dict, tasks: str) -> None:
    folder = root / "tau_bench" / "envs" / env
    (folder / "tools").mkdir(parents=True)
    (folder / "data").mkdir()
    (folder / "__init__.py").write_text(f"from tau_bench.envs.{env}.env import Env  # needs the user simulator\n")
    (folder / "env.py").write_text("import litellm  # not installed where passhat runs\n\n\nclass Env:\n"
                                   "    def __init__(self):\n        self.terminate_tools = ['transfer_to_human_agents']\n")
    (folder / "wiki.md").write_text(f"# {env.title()} agent policy\n\nAuthenticate the user before any change.\n")
    (folder / "tasks_test.py").write_text(tasks)
    for name, records in data.items():
        (folder / "data" / f"{name}.json").write_text(json.dumps(records, indent=2))
    for name, (cls, description, params, body) in tools.items():
        (folder / "tools" / f"{name}.py").write_text(tool_file(cls, name, description, params, body))
    imports = "".join(f"from .{name} import {spec[0]}\n" for name, spec in tools.items())
    (folder / "tools" / "__init__.py").write_text(imports + f"\nALL_TOOLS = [{', '.join(s[0] for s in tools.values())}]\n")


def write_checkout(root: Path, *, airline: bool = True) -> Path:
    """A τ-bench-shaped checkout at ``root``: retail (and airline) with data, tools, policy and tasks."""
    (root / "tau_bench" / "envs").mkdir(parents=True)
    (root / "tau_bench" / "__init__.py").write_text("import litellm  # τ-bench's agents need it; passhat must not\n")
    (root / "tau_bench" / "envs" / "__init__.py").write_text("from tau_bench.envs.base import Env\n")
    (root / "tau_bench" / "envs" / "tool.py").write_text(TOOL_BASE)
    write_env(root, "retail", RETAIL_TOOLS, RETAIL_DATA, RETAIL_TASKS)
    # as in τ-bench: retail has test, train and dev tasks, airline only test ones
    (root / "tau_bench" / "envs" / "retail" / "tasks_dev.py").write_text(RETAIL_DEV_TASKS)
    if airline:
        write_env(root, "airline", AIRLINE_TOOLS, AIRLINE_DATA, AIRLINE_TASKS)
    return root


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    return write_checkout(tmp_path / "tau-bench")


@pytest.fixture
def make_checkout() -> object:
    """``write_checkout`` itself, for tests that need more than one checkout."""
    return write_checkout
RETAIL_DEV_TASKS = '''
from tau_bench.types import Action, Task

TASKS_DEV = [
    Task(
        annotator="0",
        user_id="ava_lee_5678",
        instruction="You are Ava Lee (phone 415 5550 1234). You only want to know your order's status; change nothing.",
        actions=[],
        outputs=[],
    ),
    Task(
        annotator="0",
        user_id="noah_brown_1234",
        instruction="You are Noah Brown. Cancel order #W0000001, then ask what the gift card and order totals are.",
        actions=[
            Action(name="find_user_id_by_email", kwargs={"email": "noah.brown1234@example.com"}),
            Action(name="cancel_pending_order", kwargs={"order_id": "#W0000001", "reason": "ordered by mistake"}),
        ],
        outputs=["327", "1000", "1786"],
    ),
]
'''
