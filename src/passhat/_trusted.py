"""Models made from values that are already of their fields' types, without pydantic's validation.

Validating a model costs ~7 K instructions plus ~1.5 K a field (a tool call's record ~37 K), and a trial made
dozens. Where every value is passhat's own — taken from models validated before, or from its own code, each of
its field's type — :func:`trusted` makes the model as ``model_construct`` does, without its per-field Python
(which made ``model_construct`` slower than validating). The instance itself still costs ~7 K (its allocation,
four slots, its set of fields), so this pays for models of many fields. Where values come from elsewhere (a
grader's, an agent's, a file), models are validated. Each use has a test holding what it makes to what
validation makes.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__


def trusted(cls: type[M], values: dict[str, Any]) -> M:
    """An instance of ``cls`` holding ``values``: every field of ``cls``, in its order, each of its type."""
    model = _new(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model
