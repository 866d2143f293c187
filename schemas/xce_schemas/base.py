"""The base model of every wire value: frozen, strict about unknown fields."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class WireModel(BaseModel):
    """A frozen pydantic model of the wire contract.

    Unknown fields are rejected (a misspelt field is an error, not silently dropped),
    and instances are immutable and hashable, so the core can share them by identity
    (spec "Architectural Support for Future Object Sharing", invariants 1 and 3).
    The hot-path records, decisions and event envelopes are plain dataclasses instead,
    hashable by value and never changed once made (``xce_schemas.alloc``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")


#: What a plain slotted wire class (a stdlib dataclass: decisions, event envelopes, a
#: snapshot's jobs) gives pydantic as ``__pydantic_config__``: unknown fields refused
#: where it is read, as a ``WireModel``'s.
PLAIN_WIRE = ConfigDict(extra="forbid")
