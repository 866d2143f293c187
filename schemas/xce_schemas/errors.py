"""One-line descriptions of validation errors, the same everywhere.

Pydantic reports where a value failed as a location tuple; users see it as a dotted
path with list indexes in brackets: ``payload.jobs[0].tasks: Input should be ...``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import ValidationError

#: Location parts pydantic adds for union and tagged-union branches, not fields.
_BRANCHES = frozenset({"float", "int", "str", "bool", "function-after", "function-plain"})

#: Messages said the same for a dataclass (records, decisions, event envelopes) as for a
#: model: an unknown field is "not permitted" wherever it is (pydantic calls it an
#: unexpected keyword argument of a dataclass).
_MESSAGES = {
    "unexpected_keyword_argument": "Extra inputs are not permitted",
    # Sequences are tuples inside (immutable); on the wire they are JSON arrays.
    "tuple_type": "Input should be a valid list",
    # Not the name of the class that holds it inside ("... instance of JobsPushPayload").
    "model_type": "Input should be a valid dictionary",
    "dataclass_type": "Input should be a valid dictionary",
}

#: Length errors of a tuple, said of a list: ``(min or max, "at least" or "at most")``.
_LENGTHS = {"too_short": ("min_length", "at least"), "too_long": ("max_length", "at most")}


def field_path(location: Sequence[int | str]) -> str:
    """``("payload", "jobs", 0, "tasks")`` → ``payload.jobs[0].tasks``."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part not in _BRANCHES:
            path += f".{part}" if path else part
    return path


def describe(exc: ValidationError, skip: int = 0, default: str = "value") -> str:
    """``path: message`` of the first error; ``skip`` drops leading location parts
    (e.g. the union tag pydantic puts first)."""
    first = exc.errors()[0]
    message = _MESSAGES.get(first["type"], first["msg"])
    length = _LENGTHS.get(first["type"])
    context = first.get("ctx", {})
    if length is not None and context.get("field_type") == "Tuple":
        bound = context[length[0]]
        items = "item" if bound == 1 else "items"
        message = f"List should have {length[1]} {bound} {items}, not {context['actual_length']}"
    return f"{field_path(first['loc'][skip:]) or default}: {message}"
