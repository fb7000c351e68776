"""The airline database: users and their reservations."""

from typing import Dict, List, Literal

from pydantic import BaseModel

from tau2.environment.db import DB


class Reservation(BaseModel):
    reservation_id: str
    user_id: str
    status: Literal["booked", "cancelled"]
    flights: List[str]
    total_paid: float
    refunded: float = 0.0


class User(BaseModel):
    user_id: str
    name: str
    reservations: List[str]


class FlightDB(DB):
    users: Dict[str, User]
    reservations: Dict[str, Reservation]
