"""The base of the platform's closed, immutable pydantic models."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["FrozenModel"]


class FrozenModel(BaseModel):
    """A pydantic model that refuses unknown fields and cannot be changed once made: what a
    configuration, a request or a recorded decision must be (a typo is an error, not ignored).
    Subclasses add to ``model_config`` (pydantic merges it with this one)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
