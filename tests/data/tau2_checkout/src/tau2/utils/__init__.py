"""Helpers in τ²'s style: the data folder, a deep update of a model, and an import-time setting."""

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

os.environ["TAU2_FIXTURE_IMPORTED"] = "1"  # as τ²'s load_dotenv() does: passhat must put os.environ back
DATA_DIR = Path(os.environ.get("TAU2_DATA_DIR") or Path(__file__).parents[3] / "data")


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def update_pydantic_model_with_dict(model: BaseModel, update: dict[str, Any]) -> BaseModel:
    return type(model).model_validate(_merge(model.model_dump(), update))
