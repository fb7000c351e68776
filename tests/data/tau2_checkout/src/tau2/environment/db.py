"""A domain's database: a pydantic model loaded from a JSON file."""

import json

from pydantic import BaseModel, ConfigDict


class DB(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @classmethod
    def load(cls, path) -> "DB":
        with open(path, encoding="utf-8") as f:
            return cls.model_validate(json.load(f))
