"""Where a refused resource requirement went wrong, and what its writer likely meant.

The parser (``xce_core.resreq.parser``) finds *that* a text is bad and *at which
position*; this module turns that into the words of the ``ResreqError`` message. Every
message names its place, then the problem:

    rusage[mem=...]: 'abc' is not a number (a rusage value is a number, optionally ...)

The place is one of:

* ``select[...]``, ``order[...]``, ``rusage[...]``, ``span[...]``, ``same[...]``,
  ``cu[...]``, ``affinity[...]``: inside that section. A leading select expression
  written without its keyword is ``select[...]`` too, as is anything at the very start
  of a request that is not a section.
* ``rusage[RES=...]``, ``span[KEYWORD=...]``: inside one ``res=value`` item that has no
  value yet (the resource or keyword as written).
* ``WORD[...]``: a word used as a section that is none.
* ``after SECTION[...]``: between the sections of a simple requirement.
* ``compound``, ``alternatives``: in the ``n*{...} + ...`` or ``{...} || {...}``
  structure around simple requirements.

Only errors about the whole text (too long, not a string) name no place.

The place comes from a small scan of the text up to the position (bracket depth decides,
as in the grammar); the guesses look at the token there and the one before it. Both
run only for refused texts, so they cost a valid request nothing. Nothing here raises
for any text (the parser's callers rely on DESIGN invariant 5).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Final

from xce_core.resreq.model import MEMORY_UNITS

__all__ = ["SECTIONS", "describe_unexpected", "place_at"]

#: Section keywords, in canonical order (``cu`` and ``affinity`` parse but are refused).
SECTIONS: Final = ("select", "order", "rusage", "span", "same", "cu", "affinity")

_NUMBER: Final = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[A-Za-z]*"
#: Tokens as the grammar sees them (section and part openers before words and numbers,
#: as their higher lark priority makes them win there).
_LEX: Final = re.compile(
    rf"(?P<open>(?:{'|'.join(SECTIONS)})\s*\[)"
    rf"|(?P<part>{_NUMBER}\s*\*\s*\{{)"
    rf"|(?P<num>{_NUMBER})"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_.]*)"
    r"|(?P<str>'[^']*'?)"
    r"|(?P<op>\|\||&&|==|!=|<=|>=|[<>=!+\-*/:,(){}\[\]])"
    r"|(?P<space>\s+)"
    r"|(?P<other>.)",
    re.S,
)

_BINARY: Final = frozenset({"||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/"})
#: Operators that have no place in a list section (rusage, order, span, same).
_NOT_IN_LISTS: Final = frozenset({"||", "&&", "==", "!=", "<", "<=", ">", ">=", "!", "+", "*", "/"})
_SEPARATORS: Final = frozenset({":", ",", "||"})


def _kind(token: str) -> str:
    """The scanner's kind of ``token`` ('end' for '')."""
    if not token:
        return "end"
    match = _LEX.match(token)
    return match.lastgroup or "other" if match else "other"


def _operand_end(token: str) -> bool:
    """Whether ``token`` can end a select operand (so an operator may follow it)."""
    return token == ")" or _kind(token) in ("word", "num", "str")


def _unit_apart(token: str, prev: str) -> str:
    """The guess for a unit written apart from its number (``20 MB``), else ''."""
    if _kind(token) == "word" and token.lower() in MEMORY_UNITS and _kind(prev) == "num":
        return f"{_q(token)} after {_q(prev)}: write the unit next to the number ({prev}{token})"
    return ""


@dataclass(slots=True)
class _Frame:
    """One level of nesting met while scanning.

    ``kind`` is "top", "{" (an alternative's braces), "part" (a compound part's braces),
    "(" or a section keyword. Levels (top, braces) track what they hold so far; sections
    track the tokens of their current ``:``-separated item.
    """

    kind: str
    phase: str = "start"  # levels: "start", "bare" (a select expression), "sections"
    last: str = ""  # levels: the last section closed
    shape: str = ""  # levels: "compound" or "alternatives"
    item: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _Scan:
    frames: list[_Frame]
    prev: str  # the last token before the position ('' at the start)

    @property
    def frame(self) -> _Frame:
        """The innermost frame that is not a parenthesis."""
        for frame in reversed(self.frames):
            if frame.kind != "(":
                return frame
        return self.frames[0]  # pragma: no cover - the top frame is never "("

    @property
    def in_parens(self) -> bool:
        return self.frames[-1].kind == "("


def _step(frames: list[_Frame], kind: str, token: str) -> None:
    """Advance the scan over one token."""
    here = frames[-1]
    if kind == "open":
        frames.append(_Frame(token.split("[")[0].rstrip()))
        return
    if here.kind == "(":
        if token == "(":
            frames.append(_Frame("("))
        elif token == ")":
            frames.pop()
        return
    if here.kind in SECTIONS:
        if token == "]":
            frames.pop()
            frames[-1].phase, frames[-1].last = "sections", here.kind
        elif token == "(":
            frames.append(_Frame("("))
        elif token in _SEPARATORS:
            here.item = []
        else:
            here.item.append(token)
        return
    if kind == "part":
        here.shape = "compound"
        frames.append(_Frame("part"))
    elif token == "{":
        here.shape = here.shape or "alternatives"
        frames.append(_Frame("{"))
    elif token == "}":
        if len(frames) > 1:
            frames.pop()
    elif here.phase != "sections" and not here.shape:
        here.phase = "bare"  # a leading select expression
        if token == "(":
            frames.append(_Frame("("))


def _scan(text: str, position: int, inclusive: bool) -> _Scan:
    """The nesting at ``position``; with ``inclusive``, a section or part opener that
    starts there counts as entered (a problem reported at an opener is that section's)."""
    frames = [_Frame("top")]
    prev = ""
    for match in _LEX.finditer(text):
        kind, token, start = match.lastgroup or "other", match.group(), match.start()
        if start >= position:
            if start == position and inclusive and kind == "open":
                _step(frames, kind, token)
            elif start == position and inclusive and kind == "part":
                frames[-1].shape = "compound"
            break
        if kind != "space":
            _step(frames, kind, token)
            prev = token
    return _Scan(frames, prev)


def _place(scan: _Scan) -> str:
    frame = scan.frame
    if frame.kind in SECTIONS:
        item = frame.item
        if (
            frame.kind in ("rusage", "span")
            and item
            and _kind(item[0]) == "word"
            and (len(item) < 3 or item[1:] == ["=", "-"])
        ):
            return f"{frame.kind}[{item[0]}=...]"
        return f"{frame.kind}[...]"
    if scan.in_parens or frame.phase == "bare":
        return "select[...]"
    if frame.shape:
        return frame.shape
    if frame.phase == "sections":
        return f"after {frame.last}[...]"
    return "select[...]"  # the start of a request: where a select expression may stand


def place_at(text: str, position: int, inclusive: bool = True) -> str:
    """The place (module docstring) of a problem reported at ``position`` of ``text``.

    Args:
        text: the whole request text.
        position: 0-based offset of the offending token.
        inclusive: whether a section or part opener that starts at ``position`` counts
            as entered (a value problem reported at an opener is that section's or that
            compound's); False for a problem found by reading up to ``position``.

    Returns:
        e.g. ``"rusage[mem=...]"``, ``"select[...]"``, ``"compound"``.
    """
    return _place(_scan(text, position, inclusive))


def _not_a_section(word: str) -> tuple[str, str]:
    lower = word.lower()
    if lower in SECTIONS:
        hint = f"keywords are lower case: {lower}[...]"
    else:
        glued = next((s for s in SECTIONS if lower.endswith(s) and len(word) > len(s)), None)
        close = difflib.get_close_matches(lower, SECTIONS, n=1, cutoff=0.7)
        if glued is not None:
            hint = f"a word directly before a section is one word: put a space before {glued}["
        elif close:
            hint = f"did you mean {close[0]}[...]?"
        else:
            hint = "the sections are " + ", ".join(f"{s}[...]" for s in SECTIONS)
    return f"{word}[...]", f"not a section ({hint})"


def _q(token: str) -> str:
    """``token`` quoted for a message: a quoted string as written, anything else as repr."""
    return token if _kind(token) == "str" and token.endswith("'") else repr(token)


def _what(token: str) -> str:
    if not token:
        return "the end of the text"
    return f"a string ({token})" if _kind(token) == "str" else _q(token)


def _unexpected(token: str, expected: str = "") -> str:
    said = f"unexpected {_q(token)}" if token else "unexpected end of text"
    return said + (f" ({expected})" if expected else "")


_ANY_VALUE: Final = "expected a value: a number, a resource name or a 'string'"


#: A call whose argument list goes wrong: ``name ( word`` just before the position.
_CALL: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\s*\(\s*(?:[A-Za-z_][A-Za-z0-9_.]*\s*)?$")


def _guess_select(token: str, prev: str, before: str, after: str) -> str:
    kind = _kind(token)
    call = _CALL.search(before)
    if call is not None:  # ``name(``: a call, whose one form is defined(res)
        name = call.group(1)
        if name in SECTIONS:
            return f"a section is written {name}[...], with square brackets, not {name}(...)"
        if name == "defined":
            return f"{_unexpected(token)} (defined(res) takes one resource name)"
        return (
            f"{_unexpected(token)} ({name}(...) is no function; the one function is defined(res))"
        )
    if token == "=":
        if after[:1] in ("<", ">"):
            return f"'={after[0]}' is not an operator (write '{after[0]}=')"
        return "'=' is not a comparison (compare with '==')"
    if token in ("", "]", ")", "}") or (token in _BINARY - {"-"} and not _operand_end(prev)):
        if prev == "(":
            return f"{_unexpected(token)} after '(' ({_ANY_VALUE})"
        if prev in _BINARY or prev == "!":
            return f"nothing after {_q(prev)} ({_ANY_VALUE})"
        if token in _BINARY:
            return f"{_q(token)} has nothing before it ({_ANY_VALUE})"
    if (kind in ("word", "num", "str") or token in ("(", "!")) and _operand_end(prev):
        if _unit_apart(token, prev):
            return _unit_apart(token, prev)
        return (
            f"{_q(token)} follows {_q(prev)} without an operator (join conditions with && or ||;"
            " compare with == != < <= > >=)"
        )
    if token in (":", ","):
        return f"{_q(token)} is not an operator in select (join conditions with && or ||)"
    return _unexpected(token)


def _guess_rusage(token: str, item: list[str], prev: str, after: str) -> str:
    if not item:
        if token in ("]", ""):
            return f"nothing after {_q(prev)} (expected res=value)"
        if _kind(token) == "num":
            return f"{_q(token)} has no resource name (write res={token})"
        return _unexpected(token, "expected res=value")
    name = item[0]
    if len(item) == 1:
        if token == "==":
            return f"write {name}=value, with one '='"
        if token in _NOT_IN_LISTS:
            return (
                f"{_q(token)} is not allowed in rusage (a reservation is {name}=value;"
                " a condition goes in select[...])"
            )
        if _kind(token) == "num":
            return f"{_q(token)} after {_q(name)}: write {name}={token}"
        if token in ("]", "", ":", ",", "||"):
            return f"{_q(name)} has no value (write {name}=value)"
        return f"{_unexpected(token)} ({_q(name)} has no value: write {name}=value)"
    if len(item) == 2 or item[1:] == ["=", "-"]:
        if token in ("]", "", ":", ",", "||"):
            return f"no value after {_q(prev)}"
        if token == "=" and prev in ("=", "=="):
            return f"write {name}=value, with one '='"
        return (
            f"{_what(token)} is not a number (a rusage value is a number, optionally with a"
            " unit such as MB)"
        )
    if _unit_apart(token, prev):
        return _unit_apart(token, prev)
    if token in _NOT_IN_LISTS or token == "=":
        return (
            f"{_q(token)} is not allowed in rusage (a select expression goes in select[...];"
            " separate rusage values with ':')"
        )
    return _unexpected(token, "separate rusage values with ':'")


def _guess_list(section: str, token: str, item: list[str], prev: str) -> str:
    """Guesses for ``order[]`` and ``same[]``: resource names joined by ':'."""
    example = "order[-mem:ut]" if section == "order" else "same[type:model]"
    if not item or item == ["-"]:
        if token in ("]", ""):
            return f"nothing after {_q(prev)} (expected a resource name)"
        if token == "-" and section == "order":
            return "one '-' reverses a key; '--' is not allowed"
        if _kind(token) == "num":
            return f"{_q(token)} is not a resource name"
        return _unexpected(token, "expected a resource name")
    if token in _NOT_IN_LISTS or token in ("=", "-"):
        what = "resources to sort by" if section == "order" else "resource names"
        return (
            f"{_q(token)} is not allowed in {section} ({section}[] lists {what}, e.g. {example};"
            " a condition goes in select[...])"
        )
    if token == "," or _kind(token) == "word":
        return f"{_unexpected(token)} (separate the names with ':', e.g. {example})"
    return _unexpected(token, f"names are separated by ':', e.g. {example}")


def _guess_span(token: str, item: list[str], prev: str) -> str:
    if not item:
        if token in ("]", ""):
            return f"nothing after {_q(prev)} (expected hosts=N or ptile=N)"
        if _kind(token) == "num":
            return f"{_q(token)} has no keyword (write ptile={token} or hosts={token})"
        return _unexpected(token, "expected hosts=N or ptile=N")
    name = item[0]
    if len(item) == 1:
        if token == "==":
            return f"write {name}=N, with one '='"
        if _kind(token) == "num":
            return f"{_q(token)} after {_q(name)}: write {name}={token}"
    elif len(item) == 2 or item[1:] == ["=", "-"]:
        if token in ("]", "", ":", ","):
            return f"no value after {_q(prev)}"
        if token == "=" and prev in ("=", "=="):
            return f"write {name}=N, with one '='"
        return f"{_what(token)} is not a whole number"
    if token == "," or _kind(token) == "word":
        return f"{_unexpected(token)} (join span keywords with ':', e.g. span[hosts=2:ptile=4])"
    if token in _NOT_IN_LISTS:
        return (
            f"{_q(token)} is not allowed in span (span[] takes hosts=N and ptile=N, joined by ':')"
        )
    return _unexpected(token)


def _guess_level(frame: _Frame, token: str, prev: str) -> tuple[str, str] | None:
    """Guesses between sections and in the compound / alternative structure."""
    kind = _kind(token)
    if token == "}" and prev.endswith("{"):
        if prev == "{":
            return "alternatives", "'{}' is empty (write {-} for no requirement)"
        return "compound", f"the part '{prev}}}' is empty (write {prev}-}} for no requirement)"
    if frame.shape == "compound":
        if kind == "open":
            return (
                "compound",
                f"{_q(token)} outside the braces (a part's sections go inside its {{...}})",
            )
        if prev == "+":
            return "compound", f"{_unexpected(token)} after '+' (expected a part n*{{...}})"
        if token == "||":
            return (
                "compound",
                "an alternative that is a compound is braced: {n*{...} + ...} || {...}",
            )
        return (
            "compound",
            f"{_unexpected(token)} (parts are joined by '+': n1*{{...}} + n2*{{...}})",
        )
    if frame.shape == "alternatives":
        if prev == "||":
            return "alternatives", f"{_unexpected(token)} after '||' (expected {{...}})"
        return (
            "alternatives",
            f"{_unexpected(token)} (alternatives are joined by '||': {{...}} || {{...}})",
        )
    if frame.phase == "start":
        if token == "||":
            return "alternatives", "'||' has nothing before it (alternatives are {...} || {...})"
        if token == "*":
            return "compound", "'*' has no task count before it (a part is n*{...})"
        return None  # a select expression may start here
    place = f"after {frame.last}[...]"
    if token == "||":
        return place, (
            "'||' between sections (alternative requirements are written {...} || {...};"
            " an OR of conditions goes inside select[...])"
        )
    if token == "&&":
        return place, "'&&' between sections (join conditions inside one select[...])"
    if kind in ("word", "num", "str") or token in ("(", "!", "-"):
        return place, (
            f"{_q(token)}: a select expression without its keyword must come first"
            " (or write select[...])"
        )
    return place, _unexpected(token)


def describe_unexpected(text: str, position: int, token: str) -> tuple[str, str]:
    """The place and the problem of a grammar error at ``position``.

    Args:
        text: the whole request text.
        position: 0-based offset where the grammar stopped.
        token: the token there as written ('' at the end of the text).

    Returns:
        ``(place, problem)``, e.g. ``("rusage[...]", "'&&' is not allowed in rusage (...)")``.
    """
    scan = _scan(text, position, inclusive=False)
    prev, frame = scan.prev, scan.frame
    after = text[position + len(token) :].lstrip()
    if token == "=" and prev in SECTIONS and after.startswith("["):
        return f"{prev}[...]", f"a section is written {prev}[...], without '=' before '['"
    at_level = frame.kind not in SECTIONS and not scan.in_parens
    if at_level and token == "[" and _kind(prev) == "word":
        return _not_a_section(prev)
    if at_level and _kind(token) == "word" and after.startswith("["):
        return _not_a_section(token)
    if at_level and token in SECTIONS and after.startswith("("):
        return f"{token}[...]", f"a section is written {token}[...], with square brackets"
    place = _place(scan)
    if token == '"':
        return place, "a string is quoted with single quotes ('...')"
    if _kind(token) == "other":
        return place, f"unexpected character {_q(token)}" + (
            " (names are ASCII letters, digits, '_' and '.')" if token.isalpha() else ""
        )
    if frame.kind in ("cu", "affinity"):
        return place, f"{frame.kind}[] sections are not supported"
    if frame.kind == "rusage":
        return place, _guess_rusage(token, frame.item, prev, after)
    if frame.kind in ("order", "same"):
        return place, _guess_list(frame.kind, token, frame.item, prev)
    if frame.kind == "span":
        return place, _guess_span(token, frame.item, prev)
    if at_level and frame.phase != "bare":
        guessed = _guess_level(frame, token, prev)
        if guessed is not None:
            return guessed
    return place, _guess_select(token, prev, text[:position], after)
