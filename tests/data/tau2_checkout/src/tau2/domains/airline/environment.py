"""The airline environment."""

from tau2.domains.airline.data_model import FlightDB
from tau2.domains.airline.tools import AirlineTools
from tau2.environment.environment import Environment
from tau2.utils import DATA_DIR

FOLDER = DATA_DIR / "tau2" / "domains" / "airline"


def get_environment(db=None) -> Environment:
    db = db or FlightDB.load(FOLDER / "db.json")
    return Environment("airline", (FOLDER / "policy.md").read_text("utf-8"), AirlineTools(db))
