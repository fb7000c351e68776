"""A tiny domain with external tools: a weather service and an SMS gateway (for cassette tests).

In production ``get_forecast`` and ``send_sms`` would call real services; here the "service" answers
with unseeded randomness and counts its calls, so a test can tell a replayed answer from a real one.
"""

import random
from pathlib import Path

from passhat.domain import Domain
from passhat.tools import ToolContext, tool

HERE = Path(__file__).parent
SERVICE_CALLS = {"get_forecast": 0, "send_sms": 0}


@tool(kind="read", external=True)
def get_forecast(ctx: ToolContext, city: str, day: str) -> dict:
    """Weather forecast for a city and day (a real weather API in production).

    Args:
        city: City name, e.g. "Paris".
        day: ISO date, e.g. "2026-06-01".
    """
    SERVICE_CALLS["get_forecast"] += 1
    if city not in ("Paris", "Lyon"):
        ctx.fail(f"unknown city {city}")
    return {"city": city, "day": day, "temp_c": round(15 + 10 * random.random(), 2), "rain": random.random() < 0.5}


@tool(kind="write", external=True)
def send_sms(ctx: ToolContext, to: str, text: str) -> dict:
    """Send a text message to a contact (a real SMS gateway in production).

    Args:
        to: Contact name, e.g. "ann".
        text: Message text.
    """
    SERVICE_CALLS["send_sms"] += 1
    sms_id = f"SMS-{random.randrange(10**6):06d}"
    ctx.db.execute("INSERT INTO outbox (id, recipient, body) VALUES (?, ?, ?)", (sms_id, to, text))
    return {"id": sms_id}


@tool(kind="write")
def save_plan(ctx: ToolContext, city: str, day: str, note: str) -> dict:
    """Save a plan.

    Args:
        city: City.
        day: ISO date.
        note: What is planned.
    """
    plan_id = ctx.new_id("P-", 3)
    ctx.db.execute("INSERT INTO plans (id, city, day, note) VALUES (?, ?, ?, ?)", (plan_id, city, day, note))
    return {"id": plan_id}


domain = Domain(
    "weather",
    schema="""
    CREATE TABLE plans (id TEXT PRIMARY KEY, city TEXT, day TEXT, note TEXT);
    CREATE TABLE outbox (id TEXT PRIMARY KEY, recipient TEXT, body TEXT);
    """,
    fixtures={"default": HERE / "fixture.yaml"},
    policy="Check the forecast before planning outdoors.",
    tools=[get_forecast, send_sms, save_plan],
)
