"""The retail environment: the agent's tools on the retail database."""

from tau2.domains.retail.data_model import RetailDB
from tau2.domains.retail.tools import RetailTools
from tau2.environment.environment import Environment
from tau2.utils import DATA_DIR

FOLDER = DATA_DIR / "tau2" / "domains" / "retail"


def get_environment(db=None) -> Environment:
    db = db or RetailDB.load(FOLDER / "db.json")
    return Environment("retail", (FOLDER / "policy.md").read_text("utf-8"), RetailTools(db))
