"""The resource-requirement model: frozen, hashable values (spec invariants 1, 3, 4).

A request is one of three shapes (spec "Resreq Type Hierarchy"):

* ``Primary``: one simple requirement for all of a job's tasks, the sections
  ``select[] order[] rusage[] span[] same[]``;
* ``Compound``: ``n1*{simple} + n2*{simple} + ...``, all parts must allocate;
* ``Alter``: ``{rr1} || {rr2} || ...``, the first alternative that allocates wins; each
  alternative is a ``Primary`` or a ``Compound``.

Nothing mutates a request once made; equal requests compare equal and hash alike, and
the core shares one object per distinct request (identity first, then value).

Select expressions are trees of the ``Node`` classes below. Units are normalised at
parse time: memory amounts (``KB``, ``MB``, ``GB``, ``TB``, ``PB``, ``EB``, ``ZB``, or
their first letter, in any case; ``MEMORY_UNITS``) become MB.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final

#: Unit suffix of a number (lower case; '' for none) -> factor to MB. The units are the
#: ones LSF documents for -R strings: KB or K, MB or M, GB or G, TB or T, PB or P, EB or
#: E, ZB or Z (bsub -R, reference/lsf-resreq.md L55). A number without unit is MB.
MEMORY_UNITS: Final[dict[str, float]] = {
    "": 1.0,
    "k": 1 / 1024,
    "kb": 1 / 1024,
    "m": 1.0,
    "mb": 1.0,
    "g": 1024.0,
    "gb": 1024.0,
    "t": 1024.0**2,
    "tb": 1024.0**2,
    "p": 1024.0**3,
    "pb": 1024.0**3,
    "e": 1024.0**4,
    "eb": 1024.0**4,
    "z": 1024.0**5,
    "zb": 1024.0**5,
}

# --- select expressions ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Num:
    """A number literal (units already normalised, memory in MB)."""

    value: float


@dataclass(frozen=True, slots=True)
class Str:
    """A string literal (``'host06-x12'`` or a bare word compared to a string resource)."""

    value: str


@dataclass(frozen=True, slots=True)
class Name:
    """A resource reference, resolved per host at evaluation (aliases already applied)."""

    name: str


@dataclass(frozen=True, slots=True)
class Defined:
    """``defined(res)``: whether the host has a value for ``res``."""

    name: str


@dataclass(frozen=True, slots=True)
class Unary:
    """``!x`` or ``-x``."""

    op: str  # "!" | "-"
    operand: Node


@dataclass(frozen=True, slots=True)
class Binary:
    """``left op right`` with op one of ``|| && == != < <= > >= + - * /``."""

    op: str
    left: Node
    right: Node


Node = Num | Str | Name | Defined | Unary | Binary


@dataclass(frozen=True, slots=True)
class Select:
    """A select section: the expression tree and its canonical text."""

    expr: Node
    text: str = field(default="", compare=False)


# --- the other sections ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OrderKey:
    """One ``order[]`` key: sort hosts by ``resource``, best first.

    ``descending`` True sorts larger values first (``order[-res]`` reverses the
    resource's default direction; the table is in ``xce_core.resreq.parser``, the
    sorting in ``xce_core.resreq.order``).
    """

    resource: str
    descending: bool


@dataclass(frozen=True, slots=True)
class Usage:
    """One ``res=value`` of an ``rusage[]`` section.

    Attributes:
        resource: the consumable resource.
        value: amount (memory in MB).
        duration_s: seconds the reservation lasts after the job starts (None: until
            the job ends). LSF's default unit is minutes; ``s``/``m``/``h`` suffixes.
        decay: LSF ``decay=1`` (parsed and kept; the reservation does not decay here).
    """

    resource: str
    value: float
    duration_s: int | None = None
    decay: bool = False


@dataclass(frozen=True, slots=True)
class Span:
    """``span[]``: ``hosts=N`` (1: all tasks on one host) and/or ``ptile=N``."""

    hosts: int | None = None
    ptile: int | None = None


@dataclass(frozen=True, slots=True)
class Primary:
    """A simple requirement (``xce_primary_resreq_t``).

    Attributes:
        select: the host filter, or None (every host).
        order: host sort keys, leftmost most significant.
        rusage: resources reserved, in order (one phase).
        span: how tasks spread over hosts, or None.
        same: resources whose value must be the same on every host of the allocation.
        text: canonical text (what the snapshot writes; parsing it gives this object).
    """

    select: Select | None = None
    order: tuple[OrderKey, ...] = ()
    rusage: tuple[Usage, ...] = ()
    span: Span | None = None
    same: tuple[str, ...] = ()
    text: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True)
class Part:
    """One ``n*{simple}`` term of a compound request."""

    tasks: int
    primary: Primary


@dataclass(frozen=True, slots=True)
class Compound:
    """``n1*{simple1} + n2*{simple2} + ...``: every part allocates or none does."""

    parts: tuple[Part, ...]
    text: str = field(default="", compare=False)

    @property
    def tasks(self) -> int:
        """Tasks over all parts."""
        return sum(part.tasks for part in self.parts)


@dataclass(frozen=True, slots=True)
class Alter:
    """``{rr1} || {rr2} || ...``: the first alternative that allocates wins."""

    alternatives: tuple[Primary | Compound, ...]
    text: str = field(default="", compare=False)


Resreq = Primary | Compound | Alter

#: The request of a job that asks for nothing in particular.
EMPTY = Primary()


def is_plain(request: Resreq | ResreqError) -> bool:
    """Whether ``request`` asks for slots only (no select, order, rusage, span or
    same): equal to ``EMPTY``, by identity first (requests are interned), then by
    value. Such a job fits wherever enough slots are free."""
    return request is EMPTY or (request.__class__ is Primary and request == EMPTY)


class ResreqErrorKind(StrEnum):
    """Why a request string was refused."""

    SYNTAX = "syntax"
    VALUE = "value"


@dataclass(frozen=True, slots=True)
class ResreqError:
    """A request that cannot be used: returned, never raised, by the parser.

    Attributes:
        kind: syntax (does not parse) or value (parses, but a number or a combination
            is not allowed, e.g. ``mem=-2`` or ``ptile=0``).
        position: 0-based character offset of the offending token in the text.
        token: the offending token as written ('' at the end of the text).
        message: one line for the user, naming position and token.
    """

    kind: ResreqErrorKind
    position: int
    token: str
    message: str
