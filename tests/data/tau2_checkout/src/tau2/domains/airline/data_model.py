"""The airline database: users and their reservations."""

from typing import Literal

from pydantic import BaseModel

from tau2.environment.db import DB


class Reservation(BaseModel):
    reservation_id: str
    user_id: str
    status: Literal["booked", "cancelled"]
    flights: list[str]
    total_paid: float
    refunded: float = 0.0


class User(BaseModel):
    user_id: str
    name: str
    reservations: list[str]


class FlightDB(DB):
    users: dict[str, User]
    reservations: dict[str, Reservation]
