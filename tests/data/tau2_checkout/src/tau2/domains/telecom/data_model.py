"""The telecom provider's database: customers and their lines."""

from enum import Enum
from typing import List

from pydantic import BaseModel

from tau2.environment.db import DB


class LineStatus(str, Enum):
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
    line_ids: List[str]


class TelecomDB(DB):
    customers: List[Customer]
    lines: List[Line]
