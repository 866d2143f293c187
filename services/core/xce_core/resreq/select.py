"""Select-expression evaluation: a parsed ``select[]`` compiled once into a host filter.

``compile_select(select)`` turns a frozen ``Select`` into a function of one host's
resource values that says whether the host is selected. It is memoised on the
``Select`` value (``functools.lru_cache``), so each distinct select is compiled once,
and it builds nested closures: no ``eval``/``exec``/``compile``.

The host mapping
================

The core passes a ``Mapping[str, float | str | bool]`` per host: the built-ins ``slots``
(free slots), ``maxslots``, ``mem`` (available MB), ``maxmem`` (MB), ``type``, ``model``,
``hname`` (host name), plus the host's user resources (booleans, numbers, strings).

Values
======

* ``Name``: the host's value when the mapping has it, else the name's own text as a
  string (so ``type==LINUX`` compares the host's type with the word ``LINUX``, as in
  LSF).
* Booleans count as 1 and 0 in arithmetic and in comparisons with numbers.
* ``defined(res)``: True when the mapping has ``res``.
* ``type==any``, ``type==local``, ``model==any``, ``model==local`` (either side, the
  word bare or quoted): True on every host (LSF's defaults; the submission host is not
  known here, so ``local`` is ``any``); the same with ``!=`` is False on every host.
* Comparisons (``== != < <= > >=``): numbers with numbers (booleans included), strings
  with strings (code-point order). A string compared with a number or a boolean is
  *undefined*.
* Arithmetic (``+ - * /``, unary ``-``): numbers only; on a string, division by zero,
  a result too large for a float or NaN the value is *undefined*.

Logic and the result
====================

``&&``, ``||`` and ``!`` use three-valued (Kleene) logic over true, false and
undefined. A number is true when non-zero (NaN: false), a boolean is itself, a string
is false (so ``select[gpu]`` is false on a host without ``gpu`` and ``select[!gpu]`` is
true there, as LSF treats an unset boolean resource as 0), undefined stays undefined:
``false && x`` and ``x && false`` are false, ``true || x`` and ``x || true`` are true,
otherwise an undefined operand makes the result undefined, and ``!undefined`` is
undefined. A host is selected only when the whole expression is true, so an expression
that cannot be evaluated (``type > 3``, ``mem / 0 > 1``, and their negations) never
selects a host. Evaluation never raises: any exception inside (e.g. from an odd
mapping) counts as not selected.

Speed: the compiled form is a few closures per host. ``&&``/``||`` chains are flattened
into one loop (a top-level ``&&`` stops at the first part that is not true),
``type==any`` and other constant parts are folded away at compile time, and a resource
compared with a number, a word or a string gets one closure per operator. One select
over 10,000 hosts takes about 1 to 6 ms (``benchmarks/bench_resreq.py``).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping
from typing import Any, Final

from xce_core.resreq.model import Binary, Defined, Name, Node, Num, Select, Str, Unary

__all__ = ["HostValues", "compile_select"]

#: One host's resource values, as the core passes them.
HostValues = Mapping[str, float | str | bool]


class _Undefined:
    """The undefined value: a comparison or arithmetic that has no answer."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNDEFINED"

    def __bool__(self) -> bool:
        return False


UNDEFINED: Final = _Undefined()

_Value = object  # bool | int | float | str | _Undefined (anything else counts as undefined)
_Eval = Callable[[HostValues], _Value]
_Truth = bool | _Undefined
_Tri = Callable[[HostValues], _Truth]

_COMPARE: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
#: ``a op b`` is ``b FLIPPED[op] a``.
_FLIPPED: Final[dict[str, str]] = {
    "==": "==",
    "!=": "!=",
    "<": ">",
    "<=": ">=",
    ">": "<",
    ">=": "<=",
}
_ARITH: Final[dict[str, Callable[[Any, Any], Any]]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}
_NUMBER_TYPES: Final = frozenset({bool, int, float})
_MISSING: Final = object()


def _tri(value: _Value) -> _Truth:
    """The truth of a value: True, False or UNDEFINED."""
    kind = type(value)
    if kind is bool:
        return value is True
    if kind is int or kind is float:
        return value != 0 and value == value  # NaN is false
    if kind is str:
        return False
    return UNDEFINED


# --- constants ---------------------------------------------------------------------


def _any_comparison(node: Binary) -> bool | None:
    """``type==any`` and kin: True (``==``) or False (``!=``) on every host, else None."""
    if node.op not in ("==", "!="):
        return None
    for subject, word in ((node.left, node.right), (node.right, node.left)):
        is_subject = isinstance(subject, Name) and subject.name in ("type", "model")
        value = word.name if isinstance(word, Name) else word.value if isinstance(word, Str) else ""
        if is_subject and value in ("any", "local"):
            return node.op == "=="
    return None


def _const(value: _Truth) -> _Tri:
    return lambda host: value


# --- truth (three-valued) ------------------------------------------------------------


def _truth(node: Node) -> _Tri | bool:
    """Compile the truth of ``node``; a plain bool when it is the same on every host."""
    if isinstance(node, Binary):
        if node.op in ("&&", "||"):
            return _chain(node)
        if node.op in _COMPARE:
            constant = _any_comparison(node)
            return constant if constant is not None else _comparison(node)
    elif isinstance(node, Unary) and node.op == "!":
        operand = _truth(node.operand)
        return (not operand) if isinstance(operand, bool) else _negation(operand)
    elif isinstance(node, Name):
        return _name_truth(node.name)
    elif isinstance(node, Defined):
        name = node.name
        return lambda host: name in host
    elif isinstance(node, Num):
        return node.value != 0
    elif isinstance(node, Str):
        return False
    value = _value(node)
    return lambda host: _tri(value(host))


def _operands(node: Node, op: str) -> list[Node]:
    """The operands of a chain of one logical operator, left to right."""
    out: list[Node] = []
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Binary) and item.op == op:
            stack.append(item.right)
            stack.append(item.left)
        else:
            out.append(item)
    return out


def _chain_parts(node: Binary) -> tuple[bool, list[_Tri]] | bool:
    """The compiled operands of an ``&&``/``||`` chain (constants folded), or its constant."""
    deciding = node.op == "||"  # True decides ||, False decides &&
    parts: list[_Tri] = []
    for operand in _operands(node, node.op):
        part = _truth(operand)
        if isinstance(part, bool):
            if part is deciding:
                return deciding
            continue  # the neutral element
        parts.append(part)
    if not parts:
        return not deciding
    return (deciding, parts)


def _chain(node: Binary) -> _Tri | bool:
    found = _chain_parts(node)
    if isinstance(found, bool):
        return found
    deciding, parts = found
    if len(parts) == 1:
        return parts[0]
    if not deciding:
        if len(parts) == 2:
            first, second = parts

            def and2(host: HostValues) -> _Truth:
                a = first(host)
                if a is False:
                    return False
                b = second(host)
                if b is False:
                    return False
                return True if a is True and b is True else UNDEFINED

            return and2
        all_parts = tuple(parts)

        def and_all(host: HostValues) -> _Truth:
            result: _Truth = True
            for part in all_parts:
                value = part(host)
                if value is False:
                    return False
                if value is not True:
                    result = UNDEFINED
            return result

        return and_all
    any_parts = tuple(parts)

    def or_any(host: HostValues) -> _Truth:
        result: _Truth = False
        for part in any_parts:
            value = part(host)
            if value is True:
                return True
            if value is not False:
                result = UNDEFINED
        return result

    return or_any


def _negation(operand: _Tri) -> _Tri:
    def not_(host: HostValues) -> _Truth:
        a = operand(host)
        if a is True:
            return False
        if a is False:
            return True
        return UNDEFINED

    return not_


def _name_truth(name: str) -> _Tri:
    def truth(host: HostValues) -> _Truth:
        value = host.get(name, _MISSING)
        kind = type(value)
        if kind is bool:
            return value is True
        if kind is int or kind is float:
            return value != 0 and value == value
        if value is _MISSING or kind is str:
            return False
        return UNDEFINED

    return truth


# --- comparisons ---------------------------------------------------------------------


def _name_vs_number(name: str, op: str, number: float) -> _Tri:
    """``name op number``, the most common test; one closure per operator for speed.

    Ordering a string (or a missing name, i.e. its text) against a number raises
    TypeError, which is the undefined case; equality needs the explicit type test.
    """
    if op == ">":

        def gt(host: HostValues) -> _Truth:
            try:
                return host.get(name, _MISSING) > number  # type: ignore[operator]
            except TypeError:
                return UNDEFINED

        return gt
    if op == ">=":

        def ge(host: HostValues) -> _Truth:
            try:
                return host.get(name, _MISSING) >= number  # type: ignore[operator]
            except TypeError:
                return UNDEFINED

        return ge
    if op == "<":

        def lt(host: HostValues) -> _Truth:
            try:
                return host.get(name, _MISSING) < number  # type: ignore[operator]
            except TypeError:
                return UNDEFINED

        return lt
    if op == "<=":

        def le(host: HostValues) -> _Truth:
            try:
                return host.get(name, _MISSING) <= number  # type: ignore[operator]
            except TypeError:
                return UNDEFINED

        return le
    equal = op == "=="

    def eq_or_ne(host: HostValues) -> _Truth:
        value = host.get(name, _MISSING)
        if type(value) in _NUMBER_TYPES:
            return (value == number) is equal
        return UNDEFINED

    return eq_or_ne


def _name_vs_word(name: str, op: str, word: Name | Str) -> _Tri:
    """``name op word`` where word is a bare word (its host value, else itself) or a string."""
    compare = _COMPARE[op]
    if isinstance(word, Str):
        text = word.value

        def vs_string(host: HostValues) -> _Truth:
            value = host.get(name, name)
            if type(value) is str:
                return compare(value, text)  # type: ignore[no-any-return]
            return UNDEFINED

        return vs_string
    other = word.name

    def vs_name(host: HostValues) -> _Truth:
        a = host.get(name, name)
        b = host.get(other, other)
        ta, tb = type(a), type(b)
        if (ta is str and tb is str) or (ta in _NUMBER_TYPES and tb in _NUMBER_TYPES):
            return compare(a, b)  # type: ignore[no-any-return]
        return UNDEFINED

    return vs_name


def _comparison(node: Binary) -> _Tri:
    op, left, right = node.op, node.left, node.right
    if isinstance(right, Num) and not isinstance(left, Num):
        if isinstance(left, Name):
            return _name_vs_number(left.name, op, right.value)
        return _value_vs_number(_value(left), op, right.value)
    if isinstance(left, Num) and not isinstance(right, Num):
        if isinstance(right, Name):
            return _name_vs_number(right.name, _FLIPPED[op], left.value)
        return _value_vs_number(_value(right), _FLIPPED[op], left.value)
    if isinstance(left, Name) and isinstance(right, Name | Str):
        return _name_vs_word(left.name, op, right)
    if isinstance(right, Name) and isinstance(left, Str):
        return _name_vs_word(right.name, _FLIPPED[op], left)
    compare = _COMPARE[op]
    lf, rf = _value(left), _value(right)

    def general(host: HostValues) -> _Truth:
        a, b = lf(host), rf(host)
        ta, tb = type(a), type(b)
        if (ta in _NUMBER_TYPES and tb in _NUMBER_TYPES) or (ta is str and tb is str):
            return compare(a, b)  # type: ignore[no-any-return]
        return UNDEFINED

    return general


def _value_vs_number(value: _Eval, op: str, number: float) -> _Tri:
    compare = _COMPARE[op]

    def vs_number(host: HostValues) -> _Truth:
        a = value(host)
        if type(a) in _NUMBER_TYPES:
            return compare(a, number)  # type: ignore[no-any-return]
        return UNDEFINED

    return vs_number


# --- values --------------------------------------------------------------------------


def _value(node: Node) -> _Eval:
    """A closure giving the value of ``node`` on a host."""
    if isinstance(node, Num):
        number = node.value
        return lambda host: number
    if isinstance(node, Str):
        text = node.value
        return lambda host: text
    if isinstance(node, Name):
        name = node.name
        return lambda host: host.get(name, name)
    if isinstance(node, Binary) and node.op in _ARITH:
        return _arithmetic(_ARITH[node.op], _value(node.left), _value(node.right))
    if isinstance(node, Unary) and node.op == "-":
        operand = _value(node.operand)

        def negate(host: HostValues) -> _Value:
            value = operand(host)
            return -value if type(value) in _NUMBER_TYPES else UNDEFINED  # type: ignore[operator]

        return negate
    logical = isinstance(node, Defined) or (
        isinstance(node, Binary) and (node.op in _COMPARE or node.op in ("&&", "||"))
    )
    if logical or (isinstance(node, Unary) and node.op == "!"):
        truth = _truth(node)  # a comparison, logic or defined() used as a value
        if isinstance(truth, bool):
            return lambda host: truth
        return truth
    return lambda host: UNDEFINED  # an operator the parser never makes


def _arithmetic(op: Callable[[Any, Any], Any], lf: _Eval, rf: _Eval) -> _Eval:
    def arithmetic(host: HostValues) -> _Value:
        a, b = lf(host), rf(host)
        if type(a) in _NUMBER_TYPES and type(b) in _NUMBER_TYPES:
            try:
                result = op(a, b)
            except ArithmeticError:  # division by zero, int too large for a float
                return UNDEFINED
            return UNDEFINED if result != result else result  # NaN
        return UNDEFINED

    return arithmetic


# --- the entry point -----------------------------------------------------------------


def _never(host: HostValues) -> bool:
    return False


def _always(host: HostValues) -> bool:
    return True


@functools.lru_cache(maxsize=4096)
def compile_select(select: Select) -> Callable[[HostValues], bool]:
    """Compile a select section into a host filter (memoised per distinct ``Select``).

    Args:
        select: a parsed select (``Primary.select``).

    Returns:
        ``selected(host) -> bool``: whether a host with resource values ``host`` (the
        mapping described in the module docstring) satisfies the select. It never
        raises; an expression that cannot be evaluated on a host is not satisfied.

    Example:
        >>> from xce_core.resreq.parser import parse_resreq
        >>> selected = compile_select(parse_resreq("select[mem > 4G && gpu]").select)
        >>> selected({"mem": 8192, "gpu": True}), selected({"mem": 8192})
        (True, False)
    """
    try:
        root = select.expr
        if isinstance(root, Binary) and root.op == "&&":
            found = _chain_parts(root)
            if isinstance(found, bool):
                return _always if found else _never
            parts = tuple(found[1])

            # At the top only true selects, so stop at the first part that is not true.
            # (A plain loop: all() over a generator is slower per host.)
            def selected_all(host: HostValues) -> bool:
                try:
                    for part in parts:  # noqa: SIM110
                        if part(host) is not True:
                            return False
                    return True
                except Exception:  # an odd mapping; never crash the session
                    return False

            return selected_all
        truth = _truth(root)
    except Exception:  # a hand-made tree the parser would not produce
        return _never
    if isinstance(truth, bool):
        return _always if truth else _never

    def selected(host: HostValues) -> bool:
        try:
            return truth(host) is True
        except Exception:  # an odd mapping; never crash the session
            return False

    return selected
