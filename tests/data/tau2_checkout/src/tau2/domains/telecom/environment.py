"""The telecom environment: after every call, the line's state reaches the user's phone."""

import json

from tau2.domains.telecom.data_model import LineStatus, TelecomDB
from tau2.domains.telecom.tools import TelecomTools
from tau2.domains.telecom.user_data_model import TelecomUserDB
from tau2.domains.telecom.user_tools import TelecomUserTools
from tau2.environment.environment import Environment
from tau2.utils import DATA_DIR

FOLDER = DATA_DIR / "tau2" / "domains" / "telecom"


class TelecomEnvironment(Environment):
    def sync_tools(self) -> None:
        surroundings = self.user_tools.db.surroundings
        if surroundings.phone_number is None:
            return
        line = self.tools.get_line_by_phone(surroundings.phone_number)
        if line is None:
            raise ValueError(f"no line for phone number {surroundings.phone_number}")
        surroundings.line_active = line.status == LineStatus.ACTIVE
        surroundings.roaming_allowed = line.roaming_enabled


def get_environment(db=None, user_db=None) -> TelecomEnvironment:
    db = db or TelecomDB.load(FOLDER / "db.json")
    with open(FOLDER / "user_db.json", encoding="utf-8") as f:
        user_db = user_db or TelecomUserDB.model_validate(json.load(f))
    policy = "<main_policy>\n" + (FOLDER / "main_policy.md").read_text("utf-8") + "\n</main_policy>"
    return TelecomEnvironment("telecom", policy, TelecomTools(db), TelecomUserTools(user_db))
