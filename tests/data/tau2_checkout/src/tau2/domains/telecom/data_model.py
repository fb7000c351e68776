"""The telecom provider's database: customers and their lines."""

from enum import StrEnum

from pydantic import BaseModel

from tau2.environment.db import DB


class LineStatus(StrEnum):
    ACTIVE = "Active"
    SUSPENDED = "Suspended"


class Line(BaseModel):
    line_id: str
    phone_number: str
    status: LineStatus
    roaming_enabled: bool
    data_used_gb: float


class Customer(BaseModel):
    customer_id: str
    full_name: str
    phone_number: str
    line_ids: list[str]


class TelecomDB(DB):
    customers: list[Customer]
    lines: list[Line]
