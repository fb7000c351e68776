"""The user's side of telecom: their phone and where they are."""


from pydantic import BaseModel

from tau2.environment.db import DB


class Phone(BaseModel):
    airplane_mode: bool = False
    roaming_enabled: bool = False


class Surroundings(BaseModel):
    name: str | None = None
    phone_number: str | None = None
    is_abroad: bool = False
    line_active: bool = True
    roaming_allowed: bool = False


class TelecomUserDB(DB):
    device: Phone
    surroundings: Surroundings
