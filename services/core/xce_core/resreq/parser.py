"""The resource-requirement parser: LSF ``-R`` text in, a frozen request or an error out.

``parse_resreq(text)`` is the one entry point. It never raises: any ``str`` gives either a
``Primary`` / ``Compound`` / ``Alter`` (``xce_core.resreq.model``) or a ``ResreqError``
whose ``position`` is the 0-based offset of the offending token, ``token`` that token as
written ('' at the end of the text), and ``message`` one line that names the place
(the section, and the resource of an rusage or span item without its value) and the
problem, with a guess at what was meant where the grammar allows, such as
``bad resource requirement at position 16: rusage[...]: '&&' is not allowed in rusage
(a select expression goes in select[...]; separate rusage values with ':')``
(``xce_core.resreq.diagnose`` words it; DESIGN invariant 5: a malformed request pends
the job with a clear reason, it never crashes the core).

The grammar (``GRAMMAR`` below) is an LALR(1) lark grammar. Bracket depth decides what a
token means, so ``||`` is an alternative between ``{...}`` at the top, a logical OR inside
``select[]`` and a usage alternative inside ``rusage[]``, and ``+``/``*`` are compound
operators only outside brackets.

Forms accepted
==============

* ``''``, whitespace only, or ``-``: no requirement (``EMPTY``, the same object each time).
* Simple: the sections ``select[...] order[...] rusage[...] span[...] same[...]`` in any
  order, each at most once, separated by optional whitespace (``select[a]order[b]`` is
  fine). Whitespace is also allowed between a keyword and its ``[`` and inside the
  brackets (``select [ mem > 4 ]``, as in IBM's own ``select [swp > 15 && maxmem >
  100]`` example). Keywords are lower case. A leading expression without a keyword is
  the select section (``swp > 15 && hpux order[ut]``); a bare word directly followed by
  a section (``gpuorder[ut]``) is one word, so a space is needed there.
* Compound: ``n1*{simple} + n2*{simple} + ...`` with whole ``n >= 1`` (``Part.tasks``;
  the sum is not checked against the job here). ``{-}`` is an empty part.
* Alternative: ``{rr1} || {rr2} || ...`` where each ``rr`` is a simple requirement, a
  compound or ``-``. A single ``{rr}`` is the same request as ``rr``.

Values
======

* Numbers: ``12``, ``1.5``, ``.5``, ``2e3``, with an optional unit K/KB, M/MB, G/GB,
  T/TB, P/PB, E/EB, Z/ZB (any case; LSF's list, ``model.MEMORY_UNITS``) that is
  converted to MB (1 GB = 1024 MB, 1 KB = 1/1024 MB; a number without unit is taken as
  it is, i.e. MB for memory). A number that is not
  finite or whose magnitude exceeds 2**63 after conversion is a VALUE error "number out
  of range"; ``mem>50E`` is valid (50 EB = 54,975,581,388,800 MB). ``1e5`` is an
  exponent; ``1e`` and ``1E`` are exabytes. Any other letters after a number
  (``4mem``, ``64bit``) are a SYNTAX error "bad number".
* select: ``|| && ! == != < <= > >= + - * /`` with C precedence (``||`` lowest, then
  ``&&``, ``== !=``, ``< <= > >=``, ``+ -``, ``* /``, unary ``! -``; binary operators are
  left-associative), parentheses, numbers, single-quoted strings (``'host06-x12'``; no
  escapes, a string cannot hold ``'``; the empty string ``''`` is a VALUE error, as in
  LSF: no host has an empty value, so ``hname!=''`` would match every host), bare words
  (``Name``: a resource, or a string value when the host has no such resource, see
  ``xce_core.resreq.select``) and ``defined(res)``. A bare ``=`` is a SYNTAX error.
  Aliases ``swap->swp``, ``idle->it``, ``login->ls``, ``cpu->r1m`` are applied to every
  resource name (select names, ``defined()``, order, rusage and same keys).
* order: ``order[[-]res[:[-]res]...]`` -> ``OrderKey(resource, descending)``, leftmost
  most significant. A plain key sorts best first by LSF's default direction for the
  resource (the ``lsinfo`` ORDER column); ``-`` flips it. The table:

  ========================================  ==========================  ===============
  resource                                  plain ``res``               ``-res``
  ========================================  ==========================  ===============
  r15s r1m r15m ut pg io ls (load indices   ascending (smaller first,   descending
  that LSF calls "increasing": more is      ``descending=False``)
  more load)
  everything else: it swp mem tmp slots     descending (larger first,   ascending
  maxslots maxmem ncpus ... and every user  ``descending=True``)
  resource
  ========================================  ==========================  ===============

  So ``order[-slots]`` packs (fewest free slots first) and ``order[slots]`` spreads, as
  IBM documents. A key given twice is a VALUE error.
* rusage: ``res=val[:res=val]...[:duration=N[s|m|h]][:decay=0|1]``; values as numbers
  above (memory units to MB); ``duration`` is a whole number of minutes by default,
  stored in seconds; ``duration`` and ``decay`` may stand anywhere in the list and apply
  to every usage. Negative values, ``duration<=0``, ``decay`` other than 0/1,
  ``decay=1`` without a duration, a resource given twice and an rusage naming no resource
  are VALUE errors. A second phase (``,``) or a usage alternative (``||``) parses, but
  is a VALUE error "not supported" at the ``,`` / ``||``.
* span: ``hosts=N`` (exactly N hosts, N >= 1), ``hosts=-1`` (cancel a queue-level span:
  ``Span(None, None)``, which differs from no span section, ``Primary.span is None``),
  ``ptile=N`` (N >= 1), joined by ``:`` (``span[hosts=2:ptile=4]``, an XCE extension).
  ``hosts=1`` with ``ptile`` and ``hosts=-1`` with ``ptile`` conflict (VALUE).
  ``ptile='!'`` (with or without per-type values), ``block=N`` and ``stripe[=N]`` parse
  but are VALUE errors "not supported". Any other keyword is a SYNTAX error.
* same: ``same[res[:res]...]`` (written order kept; a repeat is a VALUE error).
* ``cu[...]`` and ``affinity[...]`` (without nested brackets) parse and are VALUE errors
  "not supported".

Errors
======

SYNTAX: the text does not parse: a bad character or token, an unbalanced bracket, brace
or parenthesis (position of the first unmatched closer, else of the innermost opener
never closed), an unterminated string, a bare ``=`` in select, a stray ``||``, an empty
section (``select[]`` ... ``same[]``; the token is the keyword with its ``[`` as
written), a section given twice (at the second), a bad number, an unknown function or
span keyword, a text longer than ``MAX_TEXT`` characters (position ``MAX_TEXT``) or
whose canonical text would be (position 0, so that every accepted text round-trips), or
an expression nested deeper than ``MAX_DEPTH``. VALUE: it parses but a number or a
combination is not allowed (see above). Every message but the whole-text ones (too
long) names its place; the places and the guesses are listed in
``xce_core.resreq.diagnose`` and docs/resreq.md. The error's ``token`` is always
``text[position:position + len(token)]``. When a text has several problems the report
is: an unbalanced bracket first, else the first grammar error, else the first other
problem met while parsing left to right (section repeats are found when their simple
requirement ends).

Sharing and canonical text
==========================

Every returned request carries ``text``, a canonical spelling (sections in the fixed
order select, order, rusage, span, same; numbers in MB without unit; durations in
seconds) such that ``parse_resreq(r.text) == r``. Equal requests are the same object:
results are interned by value, through their canonical text, which is a one-to-one
spelling of the value (a table of at most ``INTERN_MAX`` objects, oldest out first), and
``parse_resreq`` keeps an LRU cache of ``CACHE_MAX`` texts. So while a request is in the
table ``parse_resreq(a) is parse_resreq(b)`` whenever the two are equal (the core still
compares by value after identity, DESIGN invariant 3). Selects, parts and the requests
inside compounds and alternatives are shared the same way. Nothing depends on hash
seeds: the tables decide by equality and evict in insertion order.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar, cast

from lark import Lark, Token, Transformer
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from xce_core.resreq.diagnose import SECTIONS, describe_unexpected, place_at
from xce_core.resreq.model import (
    EMPTY,
    MEMORY_UNITS,
    Alter,
    Binary,
    Compound,
    Defined,
    Name,
    Node,
    Num,
    OrderKey,
    Part,
    Primary,
    Resreq,
    ResreqError,
    ResreqErrorKind,
    Select,
    Span,
    Str,
    Unary,
    Usage,
)

__all__ = [
    "ALIASES",
    "CACHE_MAX",
    "GRAMMAR",
    "INTERN_MAX",
    "MAX_DEPTH",
    "MAX_TEXT",
    "ORDER_ASCENDING_BY_DEFAULT",
    "canonical_text",
    "default_descending",
    "parse_resreq",
]

#: Resource-name aliases LSF accepts (select string documentation), applied everywhere.
ALIASES: Final[dict[str, str]] = {"swap": "swp", "idle": "it", "login": "ls", "cpu": "r1m"}

#: Resources a plain ``order[res]`` sorts smallest first: the load indices LSF documents
#: as "increasing" (a larger value means more load). Every other resource sorts largest
#: first.
ORDER_ASCENDING_BY_DEFAULT: Final[frozenset[str]] = frozenset(
    {"r15s", "r1m", "r15m", "ut", "pg", "io", "ls"}
)

#: Longest text parsed (characters); longer is a SYNTAX error at this position.
MAX_TEXT: Final = 8192
#: Deepest select expression (operator nesting); deeper is a SYNTAX error.
MAX_DEPTH: Final = 200
#: Requests (and selects, parts) kept in the intern table.
INTERN_MAX: Final = 1 << 16
#: Texts kept in ``parse_resreq``'s LRU cache.
CACHE_MAX: Final = 1 << 16

#: Largest magnitude of a number after unit conversion.
_LIMIT: Final = float(2**63)

#: Duration suffix -> seconds.
_DURATION_UNITS: Final[dict[str, int]] = {"": 60, "s": 1, "m": 60, "h": 3600}

GRAMMAR: Final = r"""
start: requirement?

?requirement: simple
            | compound
            | alter
            | MINUS                         -> dash

alter: LBRACE alt_body RBRACE (OROR LBRACE alt_body RBRACE)*
?alt_body: simple | compound | MINUS        -> dash

compound: part (PLUS part)*
part: PART_OPEN part_body RBRACE
?part_body: simple | MINUS                  -> dash

simple: expr section*                       -> simple_bare
      | section+                            -> simple_sections

?section: select_sec | order_sec | rusage_sec | span_sec | same_sec | OTHER_SECTION

select_sec: SELECT_OPEN expr? RSQB
order_sec: ORDER_OPEN (order_key (COLON order_key)*)? RSQB
order_key: MINUS? NAME
rusage_sec: RUSAGE_OPEN (usage_phase ((COMMA | OROR) usage_phase)*)? RSQB
usage_phase: usage_item (COLON usage_item)*
usage_item: NAME EQ MINUS? NUMBER
span_sec: SPAN_OPEN (span_item (COLON span_item)*)? RSQB
span_item: NAME (EQ span_value)?
span_value: MINUS? NUMBER
          | STRING (COMMA NAME COLON NUMBER)*
same_sec: SAME_OPEN (NAME (COLON NAME)*)? RSQB

// Binary operators are read as one flat list and grouped by precedence in the
// transformer (fewer LALR reductions than one rule per precedence level).
expr: unary (_binop unary)*
_binop: OROR | ANDAND | EQ_OP | REL_OP | PLUS | MINUS | STAR | SLASH
?unary: atom
      | (BANG | MINUS) unary                -> unop
?atom: NUMBER                               -> num
     | STRING                               -> string
     | NAME                                 -> name
     | NAME "(" NAME ")"                    -> call
     | "(" expr ")"

SELECT_OPEN.3: /select\s*\[/
ORDER_OPEN.3: /order\s*\[/
RUSAGE_OPEN.3: /rusage\s*\[/
SPAN_OPEN.3: /span\s*\[/
SAME_OPEN.3: /same\s*\[/
OTHER_SECTION.3: /(?:cu|affinity)\s*\[[^\[\]]*\]/
PART_OPEN.3: /(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[A-Za-z]*\s*\*\s*\{/
NUMBER.2: /(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[A-Za-z]*/
NAME: /[A-Za-z_][A-Za-z0-9_.]*/
STRING: /'[^']*'/
OROR: "||"
ANDAND: "&&"
EQ_OP: /==|!=/
REL_OP: /<=|>=|<|>/
EQ: "="
PLUS: "+"
MINUS: "-"
STAR: "*"
SLASH: "/"
BANG: "!"
COLON: ":"
COMMA: ","
LBRACE: "{"
RBRACE: "}"
RSQB: "]"
%ignore /\s+/
"""

# --- errors --------------------------------------------------------------------------


class _Refusal(Exception):
    """A problem at ``text[start:end]`` (becomes a ``ResreqError``; the token is that slice).

    ``place`` names where it is (``xce_core.resreq.diagnose``); None: worked out from
    the position when the message is made, an opener there counting as entered.
    """

    def __init__(
        self,
        kind: ResreqErrorKind,
        start: int,
        end: int,
        detail: str,
        place: str | None = None,
    ) -> None:
        super().__init__(detail)
        self.kind = kind
        self.start = start
        self.end = end
        self.detail = detail
        self.place = place

    def error(self, text: str) -> ResreqError:
        place = self.place if self.place is not None else place_at(text, self.start)
        token = text[self.start : self.end]
        return _error(self.kind, self.start, token, f"{place}: {self.detail}")


def _error(kind: ResreqErrorKind, position: int, token: str, detail: str) -> ResreqError:
    return ResreqError(
        kind=kind,
        position=position,
        token=token,
        message=f"bad resource requirement at position {position}: {detail}",
    )


def _syntax(start: int, end: int, detail: str) -> _Refusal:
    return _Refusal(ResreqErrorKind.SYNTAX, start, end, detail)


def _value(start: int, end: int, detail: str) -> _Refusal:
    return _Refusal(ResreqErrorKind.VALUE, start, end, detail)


def _at(tok: Token) -> int:
    return tok.start_pos if tok.start_pos is not None else 0


def _end(tok: Token) -> int:
    return tok.end_pos if tok.end_pos is not None else _at(tok) + len(tok)


def _syntax_at(tok: Token, detail: str) -> _Refusal:
    """A SYNTAX problem whose token is ``tok``."""
    return _syntax(_at(tok), _end(tok), detail)


def _value_at(first: Token, detail: str, last: Token | None = None) -> _Refusal:
    """A VALUE problem whose token runs from ``first`` to ``last`` (default ``first``)."""
    return _value(_at(first), _end(last if last is not None else first), detail)


#: What counts as "the token" at an error position in raw text.
_TOKEN_AT: Final = re.compile(r"'[^']*'?|[A-Za-z0-9_.]+|\|\||&&|[=!<>]=|\S")


def _token_at(text: str, position: int) -> str:
    match = _TOKEN_AT.match(text, position)
    return match.group() if match else ""


_CLOSER: Final = {"(": ")", "[": "]", "{": "}"}


def _bracket_problem(text: str) -> _Refusal | None:
    """The first bracket problem in ``text`` (quoted strings skipped), or None."""
    stack: list[tuple[str, int]] = []
    i, n = 0, len(text)
    problem: _Refusal | None = None
    while i < n and problem is None:
        ch = text[i]
        if ch == "'":
            end = text.find("'", i + 1)
            if end < 0:
                problem = _syntax(i, n, "unterminated quoted string")
            i = n if end < 0 else end + 1
            continue
        if ch in "([{":
            stack.append((ch, i))
        elif ch in ")]}":
            if not stack:
                problem = _syntax(i, i + 1, f"unmatched {ch!r}")
            else:
                opener, at = stack.pop()
                if _CLOSER[opener] != ch:
                    problem = _syntax(
                        i, i + 1, f"{ch!r} does not close {opener!r} at position {at}"
                    )
        i += 1
    if problem is None and stack:
        opener, at = stack[-1]
        problem = _syntax(at, at + 1, f"{opener!r} is never closed")
    if problem is not None:
        problem.place = _bracket_place(text, problem.start)
    return problem


def _bracket_place(text: str, at: int) -> str:
    """Where a bracket problem at ``at`` is: a brace opens a compound part (``n*{``) or
    an alternative; any other bracket is placed by reading the text up to it."""
    if text[at] == "{":
        return "compound" if text[:at].rstrip().endswith("*") else "alternatives"
    return place_at(text, at, inclusive=False)


def _grammar_problem(text: str, exc: UnexpectedInput) -> _Refusal:
    """The ``_Refusal`` for a lark grammar error (SYNTAX), worded by
    ``xce_core.resreq.diagnose`` from the place and the tokens around it."""
    at, end = len(text), len(text)  # the end of the text (UnexpectedEOF, or $END)
    if isinstance(exc, UnexpectedToken) and exc.token.type != "$END":
        at, end = _at(exc.token), _end(exc.token)
    elif isinstance(exc, UnexpectedCharacters):
        at = exc.pos_in_stream if exc.pos_in_stream is not None else len(text)
        end = at + len(_token_at(text, at))
    place, detail = describe_unexpected(text, at, text[at:end])
    return _Refusal(ResreqErrorKind.SYNTAX, at, end, detail, place)


# --- numbers -------------------------------------------------------------------------

_NUMBER: Final = re.compile(r"((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)([A-Za-z]*)")
_WHOLE: Final = re.compile(r"[0-9]+")


def _number(tok: Token) -> float:
    """A number token in MB (units converted), checked finite and within 2**63."""
    text = str(tok)
    match = _NUMBER.fullmatch(text)
    factor = MEMORY_UNITS.get(match.group(2).lower()) if match else None
    if match is None or factor is None:
        raise _syntax_at(tok, f"bad number {text!r} (units: K M G T P E Z, B optional)")
    value = float(match.group(1)) * factor
    if not math.isfinite(value) or abs(value) > _LIMIT:
        raise _value_at(tok, f"number out of range {text!r}")
    return value


def _count(text: str, start: int, what: str) -> int:
    """A whole-number count (tasks, hosts, ptile) of at least 1, written at ``start``."""
    end = start + len(text)
    if not _WHOLE.fullmatch(text):
        raise _value(start, end, f"{what} must be a whole number, not {text!r}")
    value = int(text)
    if value > 2**63:
        raise _value(start, end, f"number out of range {text!r}")
    if value < 1:
        raise _value(start, end, f"{what} must be at least 1, not {text}")
    return value


def _duration(tok: Token) -> int:
    """``duration=N[s|m|h]`` in seconds (minutes without a suffix)."""
    text = str(tok)
    match = re.fullmatch(r"([0-9]+)([A-Za-z]*)", text)
    factor = _DURATION_UNITS.get(match.group(2).lower()) if match else None
    if match is None or factor is None:
        raise _value_at(tok, f"duration must be a whole number with s, m or h: {text!r}")
    seconds = int(match.group(1)) * factor
    if seconds <= 0:
        raise _value_at(tok, "duration must be positive")
    if seconds > 2**63:
        raise _value_at(tok, f"number out of range {text!r}")
    return seconds


def _fmt_num(value: float) -> str:
    """Canonical spelling of a number: whole numbers without a point, else ``repr``."""
    if value.is_integer():
        return str(int(value))
    return repr(value)


def default_descending(resource: str) -> bool:
    """Whether a plain ``order[resource]`` sorts larger values first (module docstring)."""
    return resource not in ORDER_ASCENDING_BY_DEFAULT


# --- canonical text ------------------------------------------------------------------

#: Binary operator precedence (higher binds tighter); all left-associative.
_PREC: Final[dict[str, int]] = {
    "||": 1,
    "&&": 2,
    "==": 3,
    "!=": 3,
    "<": 4,
    "<=": 4,
    ">": 4,
    ">=": 4,
    "+": 5,
    "-": 5,
    "*": 6,
    "/": 6,
}


def _expr_text(node: Node) -> str:
    if isinstance(node, Binary):
        prec = _PREC.get(node.op, 0)
        left = _expr_text(node.left)
        right = _expr_text(node.right)
        if isinstance(node.left, Binary) and _PREC.get(node.left.op, 0) < prec:
            left = f"({left})"
        if isinstance(node.right, Binary) and _PREC.get(node.right.op, 0) <= prec:
            right = f"({right})"
        return f"{left} {node.op} {right}"
    if isinstance(node, Unary):
        operand = _expr_text(node.operand)
        if isinstance(node.operand, Binary):
            operand = f"({operand})"
        return f"{node.op}{operand}"
    if isinstance(node, Num):
        return _fmt_num(node.value)
    if isinstance(node, Str):
        return f"'{node.value}'"
    if isinstance(node, Name):
        return node.name
    return f"defined({node.name})"


def _usage_text(usages: Sequence[Usage]) -> str:
    phases: list[list[Usage]] = []
    for usage in usages:
        last = phases[-1][-1] if phases else None
        if last is not None and (last.duration_s, last.decay) == (usage.duration_s, usage.decay):
            phases[-1].append(usage)
        else:
            phases.append([usage])
    texts = []
    for phase in phases:
        items = [f"{u.resource}={_fmt_num(u.value)}" for u in phase]
        if phase[0].duration_s is not None:
            items.append(f"duration={phase[0].duration_s}s")
        if phase[0].decay:
            items.append("decay=1")
        texts.append(":".join(items))
    return ", ".join(texts)


def _sections_text(
    select: Select | None,
    order: tuple[OrderKey, ...],
    rusage: tuple[Usage, ...],
    span: Span | None,
    same: tuple[str, ...],
) -> str:
    sections = []
    if select is not None:
        sections.append(f"select[{select.text}]")
    if order:
        keys = (
            ("-" if k.descending != default_descending(k.resource) else "") + k.resource
            for k in order
        )
        sections.append(f"order[{':'.join(keys)}]")
    if rusage:
        sections.append(f"rusage[{_usage_text(rusage)}]")
    if span is not None:
        items = []
        if span.hosts is not None:
            items.append(f"hosts={span.hosts}")
        if span.ptile is not None:
            items.append(f"ptile={span.ptile}")
        sections.append(f"span[{':'.join(items) or 'hosts=-1'}]")
    if same:
        sections.append(f"same[{':'.join(same)}]")
    return " ".join(sections)


def _primary_text(p: Primary) -> str:
    return _sections_text(p.select, p.order, p.rusage, p.span, p.same)


def _part_text(part: Part) -> str:
    return f"{part.tasks}*{{{part.primary.text or '-'}}}"


def _braced(request: Primary | Compound) -> str:
    return f"{{{request.text or '-'}}}"


def canonical_text(request: Resreq) -> str:
    """The canonical spelling of ``request`` (what ``text`` holds on parsed requests).

    Args:
        request: any request, e.g. one the core assembled from parsed parts.

    Returns:
        Text that ``parse_resreq`` turns back into an equal request ('' for ``EMPTY``),
        for every request the parser can produce.
    """
    if isinstance(request, Primary):
        return _primary_text(request)
    if isinstance(request, Compound):
        return " + ".join(_part_text(p) for p in request.parts)
    return " || ".join(_braced(a) for a in request.alternatives)


# --- sharing -------------------------------------------------------------------------

_T = TypeVar("_T")

#: The intern table: (kind, canonical text) -> the one shared object of that value.
#: Canonical text is a one-to-one spelling of the value (``parse_resreq(r.text) == r``),
#: so keying by it is keying by value, with cached string hashes instead of hashing
#: whole expression trees at every level.
_SHARED: dict[tuple[str, str], object] = {}


def _shared(kind: str, text: str, make: Callable[[], _T]) -> _T:
    """The shared ``kind`` object whose canonical text is ``text`` (made on first use)."""
    key = (kind, text)
    found = _SHARED.get(key)
    if found is not None:
        return cast(_T, found)
    if len(_SHARED) >= INTERN_MAX:
        del _SHARED[next(iter(_SHARED))]  # oldest first: deterministic
    made = make()
    _SHARED[key] = made
    return made


# --- building ------------------------------------------------------------------------

_Expr = tuple[Node, int]  # a select expression and its nesting depth
_Section = tuple[str, Token | None, object]  # (keyword, opener token, value)


def _name(tok: Token) -> str:
    text = str(tok)
    return ALIASES.get(text, text)


def _group(items: list[Any]) -> _Expr:
    """Group ``operand (op operand)*`` by precedence (left-associative)."""
    operands: list[_Expr] = [items[0]]
    ops: list[Token] = []

    def reduce() -> None:
        op = ops.pop()
        right = operands.pop()
        left = operands.pop()
        depth = max(left[1], right[1]) + 1
        if depth > MAX_DEPTH:
            raise _syntax_at(op, f"expression nested deeper than {MAX_DEPTH}")
        operands.append((Binary(str(op), left[0], right[0]), depth))

    for i in range(1, len(items), 2):
        op = items[i]
        prec = _PREC[op]
        while ops and _PREC[ops[-1]] >= prec:
            reduce()
        ops.append(op)
        operands.append(items[i + 1])
    while ops:
        reduce()
    return operands[0]


def _select(expr: _Expr) -> Select:
    node = expr[0]
    text = _expr_text(node)
    return _shared("select", text, lambda: Select(expr=node, text=text))


def _order(keys: list[tuple[str, bool, Token]]) -> tuple[OrderKey, ...]:
    seen: set[str] = set()
    out = []
    for resource, descending, tok in keys:
        if resource in seen:
            raise _value_at(tok, f"{resource!r} given twice")
        seen.add(resource)
        out.append(OrderKey(resource, descending))
    return tuple(out)


_RawUsage = tuple[Token, Token | None, Token]  # name, minus sign or None, number


def _rusage(opener: Token, phase: list[_RawUsage]) -> tuple[Usage, ...]:
    amounts: list[tuple[str, float]] = []
    seen: set[str] = set()
    duration: int | None = None
    decay: Token | None = None
    for key, minus, number in phase:
        resource = _name(key)
        if resource in seen:
            raise _value_at(key, f"{resource!r} given twice")
        seen.add(resource)
        if resource == "duration":
            if minus is not None:
                raise _value_at(minus, "duration must be positive", number)
            duration = _duration(number)
        elif resource == "decay":
            if minus is not None or str(number) not in ("0", "1"):
                raise _value_at(minus or number, "decay must be 0 or 1", number)
            decay = key if str(number) == "1" else None
        else:
            if minus is not None:
                raise _value_at(minus, "negative value (an amount reserved is 0 or more)", number)
            amounts.append((resource, _number(number)))
    if not amounts:
        raise _value_at(opener, "no resource to reserve (duration and decay go with res=value)")
    if decay is not None and duration is None:
        raise _value_at(decay, "decay=1 needs a duration")
    return tuple(Usage(r, v, duration, decay is not None) for r, v in amounts)


_RawSpan = tuple[Token, list[Token] | None]  # keyword, value tokens (None: no '=')


def _span(items: list[_RawSpan]) -> Span:
    hosts: int | None = None
    ptile: int | None = None
    seen: set[str] = set()
    for key, value in items:
        word = str(key)
        if word in seen:
            raise _value_at(key, f"{word!r} given twice")
        if word in ("block", "stripe"):
            raise _value_at(key, f"{word} is not supported")
        if word not in ("hosts", "ptile"):
            close = difflib.get_close_matches(word, ("hosts", "ptile"), n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise _syntax_at(key, f"unknown keyword {word!r} (span takes hosts=N, ptile=N{hint})")
        seen.add(word)
        if value is None:
            raise _syntax_at(key, f"{word} needs a value ({word}=N)")
        if value[0].type == "STRING":
            raise _value_at(value[0], f"{word}={value[0]} is not supported", value[-1])
        if word == "hosts":
            if value[0].type == "MINUS":
                number = value[1]
                if str(number) != "1":
                    raise _value_at(value[0], "hosts must be -1 or at least 1", number)
                hosts = -1
            else:
                hosts = _count(str(value[0]), _at(value[0]), "hosts")
        else:
            if value[0].type == "MINUS":
                raise _value_at(value[0], "ptile must be at least 1", value[1])
            ptile = _count(str(value[0]), _at(value[0]), "ptile")
        if hosts is not None and ptile is not None and hosts in (1, -1):
            why = "puts every task on one host" if hosts == 1 else "cancels the span"
            raise _value_at(
                key, f"hosts={hosts} conflicts with ptile={ptile} (hosts={hosts} {why})"
            )
    return Span(hosts=None if hosts == -1 else hosts, ptile=ptile)


def _same(names: list[Token]) -> tuple[str, ...]:
    seen: set[str] = set()
    out = []
    for tok in names:
        resource = _name(tok)
        if resource in seen:
            raise _value_at(tok, f"{resource!r} given twice")
        seen.add(resource)
        out.append(resource)
    return tuple(out)


def _empty_section(opener: Token) -> _Refusal:
    """An empty section: SYNTAX at its keyword, the token being ``keyword[`` as written."""
    keyword = str(opener).split("[")[0].rstrip()
    return _syntax_at(opener, f"empty section (leave out {keyword}[] if it asks for nothing)")


#: How to write what a repeated section meant, in one section.
_JOIN_HINT: Final = {
    "select": "join the conditions in one select[...] with &&",
    "order": "list every key in one order[...], joined by ':'",
    "rusage": "list every resource in one rusage[...], joined by ':'",
    "span": "put both keywords in one span[...], joined by ':'",
    "same": "list every resource in one same[...], joined by ':'",
}


def _primary(sections: list[_Section]) -> Primary:
    found: dict[str, object] = {}
    for keyword, opener, value in sections:
        if keyword in found and opener is not None:
            raise _syntax_at(opener, f"given twice ({_JOIN_HINT[keyword]})")
        found[keyword] = value
    select = cast(Select | None, found.get("select"))
    order = cast(tuple[OrderKey, ...], found.get("order", ()))
    rusage = cast(tuple[Usage, ...], found.get("rusage", ()))
    span = cast(Span | None, found.get("span"))
    same = cast(tuple[str, ...], found.get("same", ()))
    text = _sections_text(select, order, rusage, span, same)
    if not text:
        return EMPTY
    return _shared("primary", text, lambda: Primary(select, order, rusage, span, same, text))


_EMPTY_STRING: Final = (
    "empty string (no host has an empty value; to ask whether a host has a resource,"
    " use defined(res))"
)


class _Build(Transformer[Token, Any]):
    """Lark callbacks, run during the LALR parse: tokens in, model objects out.

    Raises ``_Refusal`` for the first problem met; ``parse_resreq`` turns it into a
    ``ResreqError``.
    """

    # --- top level ---

    def start(self, c: list[Any]) -> Resreq:
        return cast(Resreq, c[0]) if c else EMPTY

    def dash(self, c: list[Any]) -> Primary:
        return EMPTY

    def alter(self, c: list[Any]) -> Primary | Compound | Alter:
        bodies = cast(list[Primary | Compound], c[1::4])
        if len(bodies) == 1:
            return bodies[0]
        text = " || ".join(_braced(b) for b in bodies)
        return _shared("alter", text, lambda: Alter(tuple(bodies), text))

    def compound(self, c: list[Any]) -> Compound:
        parts = cast(list[Part], c[0::2])
        text = " + ".join(_part_text(p) for p in parts)
        return _shared("compound", text, lambda: Compound(tuple(parts), text))

    def part(self, c: list[Any]) -> Part:
        opener = cast(Token, c[0])
        count = str(opener).split("*")[0].rstrip()
        tasks = _count(count, _at(opener), "task count")
        part = Part(tasks, cast(Primary, c[1]))
        return _shared("part", _part_text(part), lambda: part)

    # --- simple requirements ---

    def simple_bare(self, c: list[Any]) -> Primary:
        first: _Section = ("select", None, _select(c[0]))
        return _primary([first, *(self._section(s) for s in c[1:])])

    def simple_sections(self, c: list[Any]) -> Primary:
        return _primary([self._section(s) for s in c])

    @staticmethod
    def _section(item: Any) -> _Section:
        if isinstance(item, Token):  # OTHER_SECTION: cu[...] or affinity[...]
            keyword = str(item).split("[")[0].rstrip()
            raise _value_at(item, f"{keyword}[] sections are not supported")
        return cast(_Section, item)

    def select_sec(self, c: list[Any]) -> _Section:
        if len(c) == 2:
            raise _empty_section(c[0])
        return ("select", c[0], _select(c[1]))

    def order_sec(self, c: list[Any]) -> _Section:
        if len(c) == 2:
            raise _empty_section(c[0])
        return ("order", c[0], _order(c[1:-1:2]))

    def order_key(self, c: list[Any]) -> tuple[str, bool, Token]:
        tok = cast(Token, c[-1])
        resource = _name(tok)
        descending = default_descending(resource)
        return (resource, not descending if len(c) == 2 else descending, tok)

    def rusage_sec(self, c: list[Any]) -> _Section:
        if len(c) == 2:
            raise _empty_section(c[0])
        usages = _rusage(c[0], c[1])
        if len(c) > 3:
            sep = cast(Token, c[2])
            what = "multi-phase rusage (',')" if sep.type == "COMMA" else "rusage alternatives"
            raise _value_at(sep, f"{what} not supported")
        return ("rusage", c[0], usages)

    def usage_phase(self, c: list[Any]) -> list[_RawUsage]:
        return cast(list[_RawUsage], c[0::2])

    def usage_item(self, c: list[Any]) -> _RawUsage:
        if len(c) == 4:
            return (c[0], c[2], c[3])
        return (c[0], None, c[2])

    def span_sec(self, c: list[Any]) -> _Section:
        if len(c) == 2:
            raise _empty_section(c[0])
        return ("span", c[0], _span(c[1:-1:2]))

    def span_item(self, c: list[Any]) -> _RawSpan:
        return (c[0], c[2] if len(c) == 3 else None)

    def span_value(self, c: list[Any]) -> list[Token]:
        return cast(list[Token], c)

    def same_sec(self, c: list[Any]) -> _Section:
        if len(c) == 2:
            raise _empty_section(c[0])
        return ("same", c[0], _same(c[1:-1:2]))

    # --- select expressions ---

    def expr(self, c: list[Any]) -> _Expr:
        if len(c) == 1:
            return cast(_Expr, c[0])
        if len(c) == 3:  # the common ``a op b``
            (left, left_depth), op, (right, right_depth) = c
            depth = max(left_depth, right_depth) + 1
            if depth > MAX_DEPTH:
                raise _syntax_at(op, f"expression nested deeper than {MAX_DEPTH}")
            return (Binary(str(op), left, right), depth)
        return _group(c)

    def unop(self, c: list[Any]) -> _Expr:
        op = cast(Token, c[0])
        node, depth = cast(_Expr, c[1])
        if depth >= MAX_DEPTH:
            raise _syntax_at(op, f"expression nested deeper than {MAX_DEPTH}")
        return (Unary(str(op), node), depth + 1)

    def num(self, c: list[Any]) -> _Expr:
        tok = cast(Token, c[0])
        return (Num(_number(tok)), 1)

    def string(self, c: list[Any]) -> _Expr:
        tok = cast(Token, c[0])
        if len(tok) == 2:
            # LSF refuses ''. No host has an empty value, so == would never match and
            # != would match every host: a wrong answer instead of a refusal.
            raise _value_at(tok, _EMPTY_STRING)
        return (Str(str(tok)[1:-1]), 1)

    def name(self, c: list[Any]) -> _Expr:
        return (Name(_name(c[0])), 1)

    def call(self, c: list[Any]) -> _Expr:
        function = cast(Token, c[0])
        name = str(function)
        if name in SECTIONS:
            detail = f"a section is written {name}[...], with square brackets, not {name}(...)"
            raise _syntax_at(function, detail)
        if name != "defined":
            detail = f"unknown function {name!r} (the one function is defined(res))"
            raise _syntax_at(function, detail)
        return (Defined(_name(c[1])), 1)


#: The parser used for every request: LALR with the callbacks run inline (no tree).
_PARSER: Final = Lark(GRAMMAR, parser="lalr", transformer=_Build())
#: The same grammar without callbacks: on a refusal, checks whether the text parses at
#: all, so that a grammar error later in the text wins over a value problem before it.
_CHECKER: Final = Lark(GRAMMAR, parser="lalr")


def _parse(text: str) -> Resreq | ResreqError:
    if len(text) > MAX_TEXT:
        return _error(ResreqErrorKind.SYNTAX, MAX_TEXT, "", f"longer than {MAX_TEXT} characters")
    if not text or text.isspace():
        return EMPTY
    problem: _Refusal
    from_grammar = False
    try:
        result = cast(Resreq, _PARSER.parse(text))
        if len(result.text) > MAX_TEXT:  # units and spacing can lengthen the canonical text
            detail = f"longer than {MAX_TEXT} characters when written canonically"
            return _error(ResreqErrorKind.SYNTAX, 0, "", detail)
        return result
    except _Refusal as refusal:
        problem = refusal
    except UnexpectedInput as exc:
        problem = _grammar_problem(text, exc)
        from_grammar = True
    brackets = _bracket_problem(text)
    if brackets is not None:
        return brackets.error(text)
    if from_grammar:
        return problem.error(text)
    try:
        _CHECKER.parse(text)
    except UnexpectedInput as exc:
        return _grammar_problem(text, exc).error(text)
    return problem.error(text)


@functools.lru_cache(maxsize=CACHE_MAX)
def _parse_cached(text: str) -> Resreq | ResreqError:
    try:
        return _parse(text)
    except Exception:  # a bug must not crash the scheduler (DESIGN invariant 5)
        return _error(ResreqErrorKind.SYNTAX, 0, _token_at(text, 0), "cannot be parsed")


def parse_resreq(text: str) -> Resreq | ResreqError:
    """Parse an LSF resource-requirement string (the ``-R`` text of a job).

    Args:
        text: the request as submitted; '' or '-' asks for nothing in particular.

    Returns:
        The shared frozen request (``EMPTY`` for no requirement), or a ``ResreqError``
        naming the 0-based position and token of the problem. Never raises, for any
        ``str`` (and returns a SYNTAX error for anything else). The grammar, value rules
        and error precedence are in the module docstring.

    Example:
        >>> parse_resreq("swp > 15 && hpux order[ut]").text
        'select[swp > 15 && hpux] order[ut]'
    """
    try:
        if type(text) is not str:
            if not isinstance(text, str):
                return _error(ResreqErrorKind.SYNTAX, 0, "", "not a string")
            text = text[:]
        return _parse_cached(text)
    except Exception:
        return _error(ResreqErrorKind.SYNTAX, 0, "", "cannot be parsed")
