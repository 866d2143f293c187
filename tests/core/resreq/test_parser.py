"""The resource-requirement parser: every section, composites, canonical text, sharing,
the bad-input table, and a property test that nothing escapes ``parse_resreq``."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xce_core.resreq.model import (
    EMPTY,
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
from xce_core.resreq.parser import (
    MAX_DEPTH,
    MAX_TEXT,
    canonical_text,
    default_descending,
    parse_resreq,
)

SYNTAX = ResreqErrorKind.SYNTAX
VALUE = ResreqErrorKind.VALUE
GB = 1024.0


def sel(text: str, expr: Node) -> Select:
    """A select with its canonical text (Select.text takes part in equality)."""
    return Select(expr=expr, text=text)


def cmp(op: str, name: str, value: float) -> Binary:
    return Binary(op, Name(name), Num(value))


def ok(text: str) -> Resreq:
    result = parse_resreq(text)
    assert not isinstance(result, ResreqError), result
    return result


def primary(text: str) -> Primary:
    result = ok(text)
    assert isinstance(result, Primary)
    return result


# --- valid requests: text -> structure and canonical text ----------------------------

VALID: list[tuple[str, str, Resreq, str]] = [
    # (id, text, expected structure, canonical text)
    ("empty text", "", EMPTY, ""),
    ("whitespace only", " \t\n ", EMPTY, ""),
    ("a dash", "-", EMPTY, ""),
    ("a dash among spaces", "  -  ", EMPTY, ""),
    (
        "select comparison",
        "select[mem>4]",
        Primary(select=sel("mem > 4", cmp(">", "mem", 4))),
        "select[mem > 4]",
    ),
    (
        "bare select with an order section (LSF example)",
        "swp > 15 && hpux order[ut]",
        Primary(
            select=sel("swp > 15 && hpux", Binary("&&", cmp(">", "swp", 15), Name("hpux"))),
            order=(OrderKey("ut", False),),
        ),
        "select[swp > 15 && hpux] order[ut]",
    ),
    (
        "quoted string value with a dash",
        "select[hname=='host06-x12']",
        Primary(
            select=sel("hname == 'host06-x12'", Binary("==", Name("hname"), Str("host06-x12")))
        ),
        "select[hname == 'host06-x12']",
    ),
    (
        "bare word compared with a string resource",
        "select[type==LINUX]",
        Primary(select=sel("type == LINUX", Binary("==", Name("type"), Name("LINUX")))),
        "select[type == LINUX]",
    ),
    (
        "defined and negation",
        "select[defined(gpu) && !(type==any)]",
        Primary(
            select=sel(
                "defined(gpu) && !(type == any)",
                Binary(
                    "&&",
                    Defined("gpu"),
                    Unary("!", Binary("==", Name("type"), Name("any"))),
                ),
            )
        ),
        "select[defined(gpu) && !(type == any)]",
    ),
    (
        "unary minus on names and numbers",
        "select[-mem < -4]",
        Primary(select=sel("-mem < -4", Binary("<", Unary("-", Name("mem")), Unary("-", Num(4))))),
        "select[-mem < -4]",
    ),
    (
        "or binds looser than and",
        "select[a || b && c]",
        Primary(
            select=sel("a || b && c", Binary("||", Name("a"), Binary("&&", Name("b"), Name("c"))))
        ),
        "select[a || b && c]",
    ),
    (
        "parentheses override precedence",
        "select[(a || b) && c]",
        Primary(
            select=sel("(a || b) && c", Binary("&&", Binary("||", Name("a"), Name("b")), Name("c")))
        ),
        "select[(a || b) && c]",
    ),
    (
        "arithmetic precedence and left associativity",
        "select[a - b - c * 2 / d >= 1 + 2]",
        Primary(
            select=sel(
                "a - b - c * 2 / d >= 1 + 2",
                Binary(
                    ">=",
                    Binary(
                        "-",
                        Binary("-", Name("a"), Name("b")),
                        Binary("/", Binary("*", Name("c"), Num(2)), Name("d")),
                    ),
                    Binary("+", Num(1), Num(2)),
                ),
            )
        ),
        "select[a - b - c * 2 / d >= 1 + 2]",
    ),
    (
        "right-nested subtraction keeps its parentheses",
        "select[a - (b - c) > 0]",
        Primary(
            select=sel(
                "a - (b - c) > 0",
                Binary(">", Binary("-", Name("a"), Binary("-", Name("b"), Name("c"))), Num(0)),
            )
        ),
        "select[a - (b - c) > 0]",
    ),
    (
        "relational binds tighter than equality",
        "select[a < b == c >= d]",
        Primary(
            select=sel(
                "a < b == c >= d",
                Binary("==", Binary("<", Name("a"), Name("b")), Binary(">=", Name("c"), Name("d"))),
            )
        ),
        "select[a < b == c >= d]",
    ),
    (
        "slots and maxslots (IBM example)",
        "select[slots>4 && maxslots < 10 || mem > 10] order[-slots:maxslots:maxmem:ut]",
        Primary(
            select=sel(
                "slots > 4 && maxslots < 10 || mem > 10",
                Binary(
                    "||",
                    Binary("&&", cmp(">", "slots", 4), cmp("<", "maxslots", 10)),
                    cmp(">", "mem", 10),
                ),
            ),
            order=(
                OrderKey("slots", False),
                OrderKey("maxslots", True),
                OrderKey("maxmem", True),
                OrderKey("ut", False),
            ),
        ),
        "select[slots > 4 && maxslots < 10 || mem > 10] order[-slots:maxslots:maxmem:ut]",
    ),
    (
        "aliases in select",
        "select[swap > 1 && idle > 2 && login < 3 && cpu < 1]",
        Primary(
            select=sel(
                "swp > 1 && it > 2 && ls < 3 && r1m < 1",
                Binary(
                    "&&",
                    Binary(
                        "&&",
                        Binary("&&", cmp(">", "swp", 1), cmp(">", "it", 2)),
                        cmp("<", "ls", 3),
                    ),
                    cmp("<", "r1m", 1),
                ),
            )
        ),
        "select[swp > 1 && it > 2 && ls < 3 && r1m < 1]",
    ),
    (
        "aliases in defined, order, rusage and same",
        "select[defined(swap)] order[cpu:-idle] rusage[swap=10] same[login]",
        Primary(
            select=sel("defined(swp)", Defined("swp")),
            order=(OrderKey("r1m", False), OrderKey("it", False)),
            rusage=(Usage("swp", 10),),
            same=("ls",),
        ),
        "select[defined(swp)] order[r1m:-it] rusage[swp=10] same[ls]",
    ),
    (
        "order default directions",
        "order[r15s:r1m:r15m:ut:pg:io:ls:it:swp:mem:tmp:slots:gpus]",
        Primary(
            order=(
                *(OrderKey(r, False) for r in ("r15s", "r1m", "r15m", "ut", "pg", "io", "ls")),
                *(OrderKey(r, True) for r in ("it", "swp", "mem", "tmp", "slots", "gpus")),
            )
        ),
        "order[r15s:r1m:r15m:ut:pg:io:ls:it:swp:mem:tmp:slots:gpus]",
    ),
    (
        "order with minus flips the default",
        "order[-r15s:-mem]",
        Primary(order=(OrderKey("r15s", True), OrderKey("mem", False))),
        "order[-r15s:-mem]",
    ),
    (
        "rusage with units, duration in minutes by default",
        "rusage[mem=2GB:swp=512:duration=10]",
        Primary(rusage=(Usage("mem", 2 * GB, 600), Usage("swp", 512, 600))),
        "rusage[mem=2048:swp=512:duration=600s]",
    ),
    (
        "rusage duration in seconds, hours, minutes and decay",
        "rusage[lic=1:duration=2h:decay=1]",
        Primary(rusage=(Usage("lic", 1, 7200, True),)),
        "rusage[lic=1:duration=7200s:decay=1]",
    ),
    (
        "rusage duration before the resources applies to all",
        "rusage[duration=30s:decay=0:lic=1:mem=5.5]",
        Primary(rusage=(Usage("lic", 1, 30), Usage("mem", 5.5, 30))),
        "rusage[lic=1:mem=5.5:duration=30s]",
    ),
    (
        "rusage zero is allowed",
        "rusage[mem=0]",
        Primary(rusage=(Usage("mem", 0),)),
        "rusage[mem=0]",
    ),
    ("span all on one host", "span[hosts=1]", Primary(span=Span(hosts=1)), "span[hosts=1]"),
    ("span exactly three hosts", "span[hosts=3]", Primary(span=Span(hosts=3)), "span[hosts=3]"),
    ("span ptile", "span[ptile=4]", Primary(span=Span(ptile=4)), "span[ptile=4]"),
    (
        "span hosts=-1 cancels a queue span",
        "span[hosts=-1]",
        Primary(span=Span(None, None)),
        "span[hosts=-1]",
    ),
    (
        "span hosts and ptile together",
        "span[ptile=4:hosts=2]",
        Primary(span=Span(hosts=2, ptile=4)),
        "span[hosts=2:ptile=4]",
    ),
    ("same section", "same[type:model]", Primary(same=("type", "model")), "same[type:model]"),
    (
        "all sections in any order",
        "same[type] span[ptile=2] rusage[mem=1] order[ut] select[gpu]",
        Primary(
            select=sel("gpu", Name("gpu")),
            order=(OrderKey("ut", False),),
            rusage=(Usage("mem", 1),),
            span=Span(ptile=2),
            same=("type",),
        ),
        "select[gpu] order[ut] rusage[mem=1] span[ptile=2] same[type]",
    ),
    (
        "sections without whitespace between them",
        "select[mem>4]order[-slots]",
        Primary(select=sel("mem > 4", cmp(">", "mem", 4)), order=(OrderKey("slots", False),)),
        "select[mem > 4] order[-slots]",
    ),
    (
        "whitespace between keyword and bracket and inside (IBM example)",
        "select [swp > 15 &&  maxmem > 100]  rusage[mem = 100] ",
        Primary(
            select=sel(
                "swp > 15 && maxmem > 100",
                Binary("&&", cmp(">", "swp", 15), cmp(">", "maxmem", 100)),
            ),
            rusage=(Usage("mem", 100),),
        ),
        "select[swp > 15 && maxmem > 100] rusage[mem=100]",
    ),
    (
        "unknown resources parse (the core decides)",
        "select[frob > 3] order[frob] rusage[frob=1] same[frob]",
        Primary(
            select=sel("frob > 3", cmp(">", "frob", 3)),
            order=(OrderKey("frob", True),),
            rusage=(Usage("frob", 1),),
            same=("frob",),
        ),
        "select[frob > 3] order[frob] rusage[frob=1] same[frob]",
    ),
    (
        "50 exabytes is a valid number",
        "mem>50E",
        Primary(select=sel("mem > 54975581388800", cmp(">", "mem", 50 * 1024.0**4))),
        "select[mem > 54975581388800]",
    ),
    (
        "compound (IBM example)",
        "2*{span[ptile=1]} + 3*{-}",
        Compound((Part(2, Primary(span=Span(ptile=1))), Part(3, EMPTY))),
        "2*{span[ptile=1]} + 3*{-}",
    ),
    (
        "compound with one part and spaces",
        " 4 * { select[gpu] } ",
        Compound((Part(4, Primary(select=sel("gpu", Name("gpu")))),)),
        "4*{select[gpu]}",
    ),
    (
        "compound part with a bare select",
        "1*{mem>4} + 2*{-}",
        Compound((Part(1, Primary(select=sel("mem > 4", cmp(">", "mem", 4)))), Part(2, EMPTY))),
        "1*{select[mem > 4]} + 2*{-}",
    ),
    (
        "alternative (IBM example)",
        "{rusage[resource1=1]} || {rusage[resource2=2]}",
        Alter((Primary(rusage=(Usage("resource1", 1),)), Primary(rusage=(Usage("resource2", 2),)))),
        "{rusage[resource1=1]} || {rusage[resource2=2]}",
    ),
    (
        "alternative of a compound and a simple",
        "{2*{select[gpu]} + 6*{-}} || {span[hosts=1]}",
        Alter(
            (
                Compound((Part(2, Primary(select=sel("gpu", Name("gpu")))), Part(6, EMPTY))),
                Primary(span=Span(hosts=1)),
            )
        ),
        "{2*{select[gpu]} + 6*{-}} || {span[hosts=1]}",
    ),
    (
        "alternative with an empty requirement",
        "{-}||{select[gpu]}||{-}",
        Alter((EMPTY, Primary(select=sel("gpu", Name("gpu"))), EMPTY)),
        "{-} || {select[gpu]} || {-}",
    ),
    (
        "a single braced requirement is that requirement",
        "{select[gpu]}",
        Primary(select=sel("gpu", Name("gpu"))),
        "select[gpu]",
    ),
    (
        "section keywords as plain resource names",
        "select[order > 1 && select]",
        Primary(
            select=sel("order > 1 && select", Binary("&&", cmp(">", "order", 1), Name("select")))
        ),
        "select[order > 1 && select]",
    ),
]


@pytest.mark.parametrize(
    ("text", "expected", "canonical"),
    [case[1:] for case in VALID],
    ids=[case[0] for case in VALID],
)
def test_valid_request(text: str, expected: Resreq, canonical: str) -> None:
    result = ok(text)
    assert result == expected
    assert type(result) is type(expected)
    assert result.text == canonical
    assert canonical_text(result) == canonical
    again = parse_resreq(result.text)
    assert again == result
    assert again is result


UNITS = [
    ("4", 4.0),
    ("4K", 4 / 1024),
    ("4kb", 4 / 1024),
    ("4M", 4.0),
    ("4mB", 4.0),
    ("4G", 4096.0),
    ("4gb", 4096.0),
    ("4T", 4 * 1024.0**2),
    ("4TB", 4 * 1024.0**2),
    ("4p", 4 * 1024.0**3),
    ("4PB", 4 * 1024.0**3),
    ("4E", 4 * 1024.0**4),
    ("4eb", 4 * 1024.0**4),
    ("1.5G", 1536.0),
    (".5G", 512.0),
    ("2e3", 2000.0),
    ("2E3", 2000.0),
    ("2e-3", 0.002),
    ("1e", 1024.0**4),
    ("1.5e2KB", 150 / 1024),
]


@pytest.mark.parametrize(("number", "mb"), UNITS, ids=[f"{n} in MB" for n, _ in UNITS])
def test_units_are_converted_to_mb_in_select_and_rusage(number: str, mb: float) -> None:
    selected = primary(f"select[mem > {number}]")
    assert selected.select is not None
    assert selected.select.expr == cmp(">", "mem", mb)
    reserved = primary(f"rusage[mem={number}]")
    assert reserved.rusage == (Usage("mem", mb),)


def test_order_direction_table() -> None:
    ascending = {"r15s", "r1m", "r15m", "ut", "pg", "io", "ls"}
    for resource in ascending:
        assert default_descending(resource) is False
    for resource in ("it", "swp", "mem", "tmp", "slots", "maxslots", "maxmem", "ncpus", "gpu"):
        assert default_descending(resource) is True


# --- sharing by identity -------------------------------------------------------------

SAME_REQUEST = [
    (
        "spacing, bare select, braces, parentheses, float spelling",
        [
            "select[mem>4]",
            "select [ mem > 4 ]",
            "mem > 4",
            "{select[mem>4]}",
            "select[(mem>4)]",
            "select[mem>4.0]",
            "select[mem>4M]",
        ],
    ),
    ("memory units", ["select[mem>4096]", "select[mem>4G]", "select[mem > 4gb]"]),
    ("aliases", ["select[swap>1] order[cpu]", "select[swp>1] order[r1m]"]),
    ("section order", ["order[ut] select[gpu]", "select[gpu] order[ut]", "gpu order[ut]"]),
    (
        "duration spelling",
        ["rusage[mem=1:duration=1]", "rusage[mem=1:duration=60s]", "rusage[duration=1m:mem=1]"],
    ),
    ("decay=0 is no decay", ["rusage[mem=1:duration=5:decay=0]", "rusage[mem=1:duration=5]"]),
    ("span key order", ["span[ptile=4:hosts=2]", "span[hosts=2:ptile=4]"]),
    (
        "default order direction written or not",
        ["order[ut:mem]", "order[ ut : mem ]"],
    ),
    ("empty requests", ["", "-", " ", "{-}", "{ - }"]),
    ("compounds", ["2*{select[a]}+1*{-}", "2 * {a} + 1 * { - }"]),
    ("alternatives", ["{a}||{2*{b}}", "{ select[a] } || { 2*{ select[b] } }"]),
]


@pytest.mark.parametrize("texts", [t for _, t in SAME_REQUEST], ids=[i for i, _ in SAME_REQUEST])
def test_equal_requests_are_one_object(texts: list[str]) -> None:
    results = [ok(text) for text in texts]
    assert all(r is results[0] for r in results)


def test_empty_request_is_the_model_constant() -> None:
    assert parse_resreq("") is EMPTY
    assert parse_resreq("-") is EMPTY
    assert parse_resreq("{-}") is EMPTY


def test_parts_and_alternatives_share_with_standalone_requests() -> None:
    alter = ok("{select[a] order[ut]} || {2*{select[b]} + 1*{-}}")
    assert isinstance(alter, Alter)
    assert alter.alternatives[0] is ok("select[a] order[ut]")
    assert alter.alternatives[1] is ok("2*{select[b]} + 1*{-}")
    compound = alter.alternatives[1]
    assert isinstance(compound, Compound)
    assert compound.parts[0].primary is ok("select[b]")
    assert compound.parts[1].primary is EMPTY
    assert primary("select[a] order[ut]").select is primary("select[a]").select


def test_distinct_requests_stay_distinct() -> None:
    assert ok("select[mem>4]") != ok("select[mem>5]")
    assert ok("order[ut]") != ok("order[-ut]")
    assert ok("span[hosts=-1]") != ok("select[a]")
    assert primary("span[hosts=-1]").span == Span(None, None)
    assert primary("select[a]").span is None


def test_results_do_not_depend_on_the_hash_seed() -> None:
    program = (
        "from xce_core.resreq.parser import parse_resreq\n"
        "for t in ['select[b || a && c] order[-slots:ut] rusage[mem=4G:lic=1:duration=5]',"
        " '{2*{same[model:type]} + 1*{-}} || {span[hosts=2:ptile=3]}', 'rusage[a=1,b=2]',"
        " 'select[a] select[b]', 'span[hosts=1:ptile=2]', 'select[(]']:\n"
        "    r = parse_resreq(t)\n"
        "    print(repr(r), getattr(r, 'text', ''))\n"
    )
    outputs = set()
    for seed in ("0", "1", "4242"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(done.stdout)
    assert len(outputs) == 1


# --- bad input: the decided outcome for each -----------------------------------------

EMPTY_STRING = (
    "empty string (no host has an empty value; to ask whether a host has a resource,"
    " use defined(res))"
)

BAD: list[tuple[str, str, ResreqErrorKind, int, str, str, str]] = [
    # (id, text, kind, position, token, place, problem): the message is
    # "bad resource requirement at position N: PLACE: PROBLEM", PLACE naming the section
    # (and the resource or keyword of an item without its value), or the compound /
    # alternative structure, or the gap after a section (xce_core.resreq.diagnose).
    (
        "negative rusage value",
        "rusage[mem=-2]",
        VALUE,
        11,
        "-2",
        "rusage[mem=...]",
        "negative value (an amount reserved is 0 or more)",
    ),
    (
        "negative rusage value with a space",
        "rusage[mem=- 2]",
        VALUE,
        11,
        "- 2",
        "rusage[mem=...]",
        "negative value (an amount reserved is 0 or more)",
    ),
    ("infinite number", "1e999", VALUE, 0, "1e999", "select[...]", "number out of range '1e999'"),
    (
        "infinite number in select",
        "select[mem > 1e999]",
        VALUE,
        13,
        "1e999",
        "select[...]",
        "number out of range '1e999'",
    ),
    (
        "number beyond 2**63 after units",
        "select[mem > 1e10EB]",
        VALUE,
        13,
        "1e10EB",
        "select[...]",
        "number out of range '1e10EB'",
    ),
    (
        "rusage beyond 2**63",
        "rusage[mem=9e18G]",
        VALUE,
        11,
        "9e18G",
        "rusage[mem=...]",
        "number out of range '9e18G'",
    ),
    (
        "unknown unit",
        "select[mem > 4mem]",
        SYNTAX,
        13,
        "4mem",
        "select[...]",
        "bad number '4mem' (units: K M G T P E Z, B optional)",
    ),
    (
        "empty select",
        "select[]",
        SYNTAX,
        0,
        "select[",
        "select[...]",
        "empty section (leave out select[] if it asks for nothing)",
    ),
    (
        "empty select with spaces",
        "select [ ]",
        SYNTAX,
        0,
        "select [",
        "select[...]",
        "empty section (leave out select[] if it asks for nothing)",
    ),
    (
        "empty order",
        "order[]",
        SYNTAX,
        0,
        "order[",
        "order[...]",
        "empty section (leave out order[] if it asks for nothing)",
    ),
    (
        "empty rusage",
        "select[a] rusage[ ]",
        SYNTAX,
        10,
        "rusage[",
        "rusage[...]",
        "empty section (leave out rusage[] if it asks for nothing)",
    ),
    (
        "empty span",
        "span[]",
        SYNTAX,
        0,
        "span[",
        "span[...]",
        "empty section (leave out span[] if it asks for nothing)",
    ),
    (
        "empty same",
        "same[]",
        SYNTAX,
        0,
        "same[",
        "same[...]",
        "empty section (leave out same[] if it asks for nothing)",
    ),
    (
        "empty braces",
        "{}",
        SYNTAX,
        1,
        "}",
        "alternatives",
        "'{}' is empty (write {-} for no requirement)",
    ),
    ("unclosed bracket", "select[mem>4", SYNTAX, 6, "[", "select[...]", "'[' is never closed"),
    (
        "unclosed bracket before another section",
        "select[mem>4 order[ut]",
        SYNTAX,
        6,
        "[",
        "select[...]",
        "'[' is never closed",
    ),
    (
        "extra closing bracket",
        "select[mem>4]]",
        SYNTAX,
        13,
        "]",
        "after select[...]",
        "unmatched ']'",
    ),
    (
        "unclosed brace",
        "{select[a]} || {select[b]",
        SYNTAX,
        15,
        "{",
        "alternatives",
        "'{' is never closed",
    ),
    ("extra closing brace", "2*{select[a]}} + 1*{-}", SYNTAX, 13, "}", "compound", "unmatched '}'"),
    (
        "brace closes a bracket",
        "{select[gpu}",
        SYNTAX,
        11,
        "}",
        "select[...]",
        "'}' does not close '[' at position 7",
    ),
    (
        "bracket closes a parenthesis",
        "select[(mem>4]",
        SYNTAX,
        13,
        "]",
        "select[...]",
        "']' does not close '(' at position 7",
    ),
    (
        "unmatched parenthesis",
        "select[mem>4)]",
        SYNTAX,
        12,
        ")",
        "select[...]",
        "')' does not close '[' at position 6",
    ),
    ("unmatched parenthesis at the top", "mem>4)", SYNTAX, 5, ")", "select[...]", "unmatched ')'"),
    (
        "unterminated string",
        "select[hname=='abc]",
        SYNTAX,
        14,
        "'abc]",
        "select[...]",
        "unterminated quoted string",
    ),
    (
        "stray || at the start",
        "|| {select[a]}",
        SYNTAX,
        0,
        "||",
        "alternatives",
        "'||' has nothing before it (alternatives are {...} || {...})",
    ),
    (
        "stray || at the end",
        "{select[a]} ||",
        SYNTAX,
        14,
        "",
        "alternatives",
        "unexpected end of text after '||' (expected {...})",
    ),
    (
        "doubled ||",
        "{a} || || {b}",
        SYNTAX,
        7,
        "||",
        "alternatives",
        "unexpected '||' after '||' (expected {...})",
    ),
    (
        "|| between unbraced requests",
        "select[a] || select[b]",
        SYNTAX,
        10,
        "||",
        "after select[...]",
        "'||' between sections (alternative requirements are written {...} || {...}; an OR of conditions goes inside select[...])",
    ),
    (
        "|| ending a select",
        "select[a ||]",
        SYNTAX,
        11,
        "]",
        "select[...]",
        "nothing after '||' (expected a value: a number, a resource name or a 'string')",
    ),
    (
        "= in select",
        "select[mem=4]",
        SYNTAX,
        10,
        "=",
        "select[...]",
        "'=' is not a comparison (compare with '==')",
    ),
    (
        "= in a bare select",
        "type = LINUX",
        SYNTAX,
        5,
        "=",
        "select[...]",
        "'=' is not a comparison (compare with '==')",
    ),
    (
        "select given twice",
        "select[a] select[b]",
        SYNTAX,
        10,
        "select[",
        "select[...]",
        "given twice (join the conditions in one select[...] with &&)",
    ),
    (
        "bare select and a select section",
        "mem>4 select[gpu]",
        SYNTAX,
        6,
        "select[",
        "select[...]",
        "given twice (join the conditions in one select[...] with &&)",
    ),
    (
        "order given twice",
        "order[ut] select[a] order [mem]",
        SYNTAX,
        20,
        "order [",
        "order[...]",
        "given twice (list every key in one order[...], joined by ':')",
    ),
    (
        "two bare words",
        "a b",
        SYNTAX,
        2,
        "b",
        "select[...]",
        "'b' follows 'a' without an operator (join conditions with && or ||; compare with == != < <= > >=)",
    ),
    (
        "upper-case keyword",
        "Select[mem>4]",
        SYNTAX,
        6,
        "[",
        "Select[...]",
        "not a section (keywords are lower case: select[...])",
    ),
    (
        "bare word glued to a section",
        "gpuorder[ut]",
        SYNTAX,
        8,
        "[",
        "gpuorder[...]",
        "not a section (a word directly before a section is one word: put a space before order[)",
    ),
    (
        "double quotes",
        'select[hname=="h1"]',
        SYNTAX,
        14,
        '"',
        "select[...]",
        "a string is quoted with single quotes ('...')",
    ),
    (
        "unknown function",
        "select[foo(x)]",
        SYNTAX,
        7,
        "foo",
        "select[...]",
        "unknown function 'foo' (the one function is defined(res))",
    ),
    (
        "multi-phase rusage",
        "rusage[mem=20, lic=1:duration=2]",
        VALUE,
        13,
        ",",
        "rusage[...]",
        "multi-phase rusage (',') not supported",
    ),
    (
        "rusage alternatives",
        "rusage[mem=1 || swp=1]",
        VALUE,
        13,
        "||",
        "rusage[...]",
        "rusage alternatives not supported",
    ),
    (
        "zero duration",
        "rusage[mem=1:duration=0]",
        VALUE,
        22,
        "0",
        "rusage[duration=...]",
        "duration must be positive",
    ),
    (
        "negative duration",
        "rusage[mem=1:duration=-5]",
        VALUE,
        22,
        "-5",
        "rusage[duration=...]",
        "duration must be positive",
    ),
    (
        "fractional duration",
        "rusage[mem=1:duration=1.5]",
        VALUE,
        22,
        "1.5",
        "rusage[duration=...]",
        "duration must be a whole number with s, m or h: '1.5'",
    ),
    (
        "duration in days",
        "rusage[mem=1:duration=2d]",
        VALUE,
        22,
        "2d",
        "rusage[duration=...]",
        "duration must be a whole number with s, m or h: '2d'",
    ),
    (
        "decay not 0 or 1",
        "rusage[mem=1:duration=5:decay=2]",
        VALUE,
        30,
        "2",
        "rusage[decay=...]",
        "decay must be 0 or 1",
    ),
    (
        "decay without duration",
        "rusage[mem=1:decay=1]",
        VALUE,
        13,
        "decay",
        "rusage[...]",
        "decay=1 needs a duration",
    ),
    (
        "resource reserved twice",
        "rusage[mem=1:mem=2]",
        VALUE,
        13,
        "mem",
        "rusage[...]",
        "'mem' given twice",
    ),
    (
        "rusage without a resource",
        "rusage[duration=5]",
        VALUE,
        0,
        "rusage[",
        "rusage[...]",
        "no resource to reserve (duration and decay go with res=value)",
    ),
    (
        "hosts=1 with ptile",
        "span[hosts=1:ptile=2]",
        VALUE,
        13,
        "ptile",
        "span[...]",
        "hosts=1 conflicts with ptile=2 (hosts=1 puts every task on one host)",
    ),
    (
        "ptile with hosts=1",
        "span[ptile=2:hosts=1]",
        VALUE,
        13,
        "hosts",
        "span[...]",
        "hosts=1 conflicts with ptile=2 (hosts=1 puts every task on one host)",
    ),
    (
        "hosts=-1 with ptile",
        "span[hosts=-1:ptile=2]",
        VALUE,
        14,
        "ptile",
        "span[...]",
        "hosts=-1 conflicts with ptile=2 (hosts=-1 cancels the span)",
    ),
    (
        "predefined ptile",
        "span[ptile='!']",
        VALUE,
        11,
        "'!'",
        "span[ptile=...]",
        "ptile='!' is not supported",
    ),
    (
        "predefined ptile per type",
        "span[ptile='!',LINUX:2]",
        VALUE,
        11,
        "'!',LINUX:2",
        "span[ptile=...]",
        "ptile='!' is not supported",
    ),
    ("block", "span[block=4]", VALUE, 5, "block", "span[...]", "block is not supported"),
    ("stripe", "span[stripe]", VALUE, 5, "stripe", "span[...]", "stripe is not supported"),
    (
        "stripe with a maximum",
        "span[stripe=2]",
        VALUE,
        5,
        "stripe",
        "span[...]",
        "stripe is not supported",
    ),
    (
        "zero hosts",
        "span[hosts=0]",
        VALUE,
        11,
        "0",
        "span[hosts=...]",
        "hosts must be at least 1, not 0",
    ),
    (
        "hosts below -1",
        "span[hosts=-2]",
        VALUE,
        11,
        "-2",
        "span[hosts=...]",
        "hosts must be -1 or at least 1",
    ),
    (
        "zero ptile",
        "span[ptile=0]",
        VALUE,
        11,
        "0",
        "span[ptile=...]",
        "ptile must be at least 1, not 0",
    ),
    (
        "fractional ptile",
        "span[ptile=1.5]",
        VALUE,
        11,
        "1.5",
        "span[ptile=...]",
        "ptile must be a whole number, not '1.5'",
    ),
    (
        "unknown span keyword",
        "span[tiles=2]",
        SYNTAX,
        5,
        "tiles",
        "span[...]",
        "unknown keyword 'tiles' (span takes hosts=N, ptile=N; did you mean ptile?)",
    ),
    (
        "span keyword without a value",
        "span[hosts]",
        SYNTAX,
        5,
        "hosts",
        "span[...]",
        "hosts needs a value (hosts=N)",
    ),
    (
        "zero tasks in a compound",
        "0*{-}",
        VALUE,
        0,
        "0",
        "compound",
        "task count must be at least 1, not 0",
    ),
    (
        "fractional tasks",
        "2*{-} + 1.5*{-}",
        VALUE,
        8,
        "1.5",
        "compound",
        "task count must be a whole number, not '1.5'",
    ),
    (
        "compound ending in +",
        "2*{-} +",
        SYNTAX,
        7,
        "",
        "compound",
        "unexpected end of text after '+' (expected a part n*{...})",
    ),
    (
        "sections after a compound",
        "2*{-} order[ut]",
        SYNTAX,
        6,
        "order[",
        "compound",
        "'order[' outside the braces (a part's sections go inside its {...})",
    ),
    ("order key twice", "order[ut:-ut]", VALUE, 10, "ut", "order[...]", "'ut' given twice"),
    ("same key twice", "same[type:type]", VALUE, 10, "type", "same[...]", "'type' given twice"),
    (
        "compute units",
        "cu[type=rack]",
        VALUE,
        0,
        "cu[type=rack]",
        "cu[...]",
        "cu[] sections are not supported",
    ),
    (
        "affinity",
        "select[a] affinity[core(1)]",
        VALUE,
        10,
        "affinity[core(1)]",
        "affinity[...]",
        "affinity[] sections are not supported",
    ),
    (
        "control character",
        "select[mem>4]\x00",
        SYNTAX,
        13,
        "\x00",
        "after select[...]",
        "unexpected character '\\x00'",
    ),
    (
        "non-ASCII letter",
        "select[mém>4]",
        SYNTAX,
        8,
        "é",
        "select[...]",
        "unexpected character 'é' (names are ASCII letters, digits, '_' and '.')",
    ),
    (
        "a grammar error wins over an earlier value problem",
        "rusage[mem=-2] select[a b]",
        SYNTAX,
        24,
        "b",
        "select[...]",
        "'b' follows 'a' without an operator (join conditions with && or ||; compare with == != < <= > >=)",
    ),
    (
        "an unbalanced bracket wins over everything",
        "rusage[mem=-2] select[a b",
        SYNTAX,
        21,
        "[",
        "select[...]",
        "'[' is never closed",
    ),
    (
        "the first value problem is reported",
        "rusage[mem=-2] select[mem > 1e999]",
        VALUE,
        11,
        "-2",
        "rusage[mem=...]",
        "negative value (an amount reserved is 0 or more)",
    ),
    (
        "an empty string literal",
        "select[hname!='']",
        VALUE,
        14,
        "''",
        "select[...]",
        EMPTY_STRING,
    ),
    (
        "an empty string compared with ==",
        "select[hname=='']",
        VALUE,
        14,
        "''",
        "select[...]",
        EMPTY_STRING,
    ),
    (
        "an empty string in a bare select",
        "hname != '' && mem > 4",
        VALUE,
        9,
        "''",
        "select[...]",
        EMPTY_STRING,
    ),
    (
        "a number with an unknown unit",
        "select[mem > 1Q]",
        SYNTAX,
        13,
        "1Q",
        "select[...]",
        "bad number '1Q' (units: K M G T P E Z, B optional)",
    ),
    (
        "an rusage value that is a word",
        "rusage[mem=abc]",
        SYNTAX,
        11,
        "abc",
        "rusage[mem=...]",
        "'abc' is not a number (a rusage value is a number, optionally with a unit such as MB)",
    ),
    (
        "an rusage value that is a quoted string",
        "rusage[mem='20']",
        SYNTAX,
        11,
        "'20'",
        "rusage[mem=...]",
        "a string ('20') is not a number (a rusage value is a number, optionally with a unit such as MB)",
    ),
    (
        "rusage written with =[",
        "rusage=[mem=20MB]",
        SYNTAX,
        6,
        "=",
        "rusage[...]",
        "a section is written rusage[...], without '=' before '['",
    ),
    (
        "select written with =[",
        "select=[mem>4]",
        SYNTAX,
        6,
        "=",
        "select[...]",
        "a section is written select[...], without '=' before '['",
    ),
    (
        "&& inside rusage",
        "rusage[mem=7000 && hname!='h3']",
        SYNTAX,
        16,
        "&&",
        "rusage[...]",
        "'&&' is not allowed in rusage (a select expression goes in select[...]; separate rusage values with ':')",
    ),
    (
        "a comparison inside rusage",
        "rusage[mem>20]",
        SYNTAX,
        10,
        ">",
        "rusage[mem=...]",
        "'>' is not allowed in rusage (a reservation is mem=value; a condition goes in select[...])",
    ),
    (
        "== inside rusage",
        "rusage[mem==20]",
        SYNTAX,
        11,
        "=",
        "rusage[mem=...]",
        "write mem=value, with one '='",
    ),
    (
        "an rusage resource without a value",
        "rusage[mem]",
        SYNTAX,
        10,
        "]",
        "rusage[mem=...]",
        "'mem' has no value (write mem=value)",
    ),
    (
        "an rusage value missing after =",
        "rusage[mem=]",
        SYNTAX,
        11,
        "]",
        "rusage[mem=...]",
        "no value after '='",
    ),
    (
        "an rusage unit apart from its number",
        "rusage[mem=20 MB]",
        SYNTAX,
        14,
        "MB",
        "rusage[...]",
        "'MB' after '20': write the unit next to the number (20MB)",
    ),
    (
        "rusage items without a separator",
        "rusage[mem=2 duration=5]",
        SYNTAX,
        13,
        "duration",
        "rusage[...]",
        "unexpected 'duration' (separate rusage values with ':')",
    ),
    (
        "rusage ending in :",
        "rusage[mem=2:]",
        SYNTAX,
        13,
        "]",
        "rusage[...]",
        "nothing after ':' (expected res=value)",
    ),
    (
        "rusage starting with :",
        "rusage[:mem=2]",
        SYNTAX,
        7,
        ":",
        "rusage[...]",
        "unexpected ':' (expected res=value)",
    ),
    (
        "an rusage number without a resource",
        "rusage[20]",
        SYNTAX,
        7,
        "20",
        "rusage[...]",
        "'20' has no resource name (write res=20)",
    ),
    (
        "rusage given twice",
        "rusage[mem=1] rusage[lic=1]",
        SYNTAX,
        14,
        "rusage[",
        "rusage[...]",
        "given twice (list every resource in one rusage[...], joined by ':')",
    ),
    (
        "a select missing a value after >",
        "select[mem>]",
        SYNTAX,
        11,
        "]",
        "select[...]",
        "nothing after '>' (expected a value: a number, a resource name or a 'string')",
    ),
    (
        "a doubled operator in select",
        "select[mem >> 2]",
        SYNTAX,
        12,
        ">",
        "select[...]",
        "nothing after '>' (expected a value: a number, a resource name or a 'string')",
    ),
    (
        "=> in select",
        "select[mem=>2]",
        SYNTAX,
        10,
        "=",
        "select[...]",
        "'=>' is not an operator (write '>=')",
    ),
    (
        "a select unit apart from its number",
        "select[mem > 4 GB]",
        SYNTAX,
        15,
        "GB",
        "select[...]",
        "'GB' after '4': write the unit next to the number (4GB)",
    ),
    (
        "a colon in select",
        "select[mem>4:gpu]",
        SYNTAX,
        12,
        ":",
        "select[...]",
        "':' is not an operator in select (join conditions with && or ||)",
    ),
    (
        "defined without a name",
        "select[defined()]",
        SYNTAX,
        15,
        ")",
        "select[...]",
        "unexpected ')' (defined(res) takes one resource name)",
    ),
    (
        "select written with parentheses",
        "select(mem>4)",
        SYNTAX,
        10,
        ">",
        "select[...]",
        "a section is written select[...], with square brackets, not select(...)",
    ),
    (
        "order written with parentheses after a section",
        "select[mem>4] order(ut)",
        SYNTAX,
        14,
        "order",
        "order[...]",
        "a section is written order[...], with square brackets",
    ),
    (
        "a comparison in order",
        "order[mem>2]",
        SYNTAX,
        9,
        ">",
        "order[...]",
        "'>' is not allowed in order (order[] lists resources to sort by, e.g. order[-mem:ut]; a condition goes in select[...])",
    ),
    (
        "order keys separated by a comma",
        "order[mem,ut]",
        SYNTAX,
        9,
        ",",
        "order[...]",
        "unexpected ',' (separate the names with ':', e.g. order[-mem:ut])",
    ),
    (
        "a doubled minus in order",
        "order[--mem]",
        SYNTAX,
        7,
        "-",
        "order[...]",
        "one '-' reverses a key; '--' is not allowed",
    ),
    (
        "a minus without a name in order",
        "order[-]",
        SYNTAX,
        7,
        "]",
        "order[...]",
        "nothing after '-' (expected a resource name)",
    ),
    (
        "a comparison in same",
        "same[type==a]",
        SYNTAX,
        9,
        "==",
        "same[...]",
        "'==' is not allowed in same (same[] lists resource names, e.g. same[type:model]; a condition goes in select[...])",
    ),
    (
        "same names separated by a comma",
        "same[type,model]",
        SYNTAX,
        9,
        ",",
        "same[...]",
        "unexpected ',' (separate the names with ':', e.g. same[type:model])",
    ),
    (
        "same given twice",
        "same[type] same[model]",
        SYNTAX,
        11,
        "same[",
        "same[...]",
        "given twice (list every resource in one same[...], joined by ':')",
    ),
    (
        "a span value that is a word",
        "span[ptile=abc]",
        SYNTAX,
        11,
        "abc",
        "span[ptile=...]",
        "'abc' is not a whole number",
    ),
    (
        "a span value missing",
        "span[ptile=]",
        SYNTAX,
        11,
        "]",
        "span[ptile=...]",
        "no value after '='",
    ),
    (
        "== in span",
        "span[ptile==2]",
        SYNTAX,
        11,
        "=",
        "span[ptile=...]",
        "write ptile=N, with one '='",
    ),
    (
        "span keywords separated by a comma",
        "span[hosts=1,ptile=2]",
        SYNTAX,
        12,
        ",",
        "span[...]",
        "unexpected ',' (join span keywords with ':', e.g. span[hosts=2:ptile=4])",
    ),
    (
        "a span number without a keyword",
        "span[ptile:4]",
        SYNTAX,
        11,
        "4",
        "span[...]",
        "'4' has no keyword (write ptile=4 or hosts=4)",
    ),
    (
        "a misspelt span keyword",
        "span[ptiles=2]",
        SYNTAX,
        5,
        "ptiles",
        "span[...]",
        "unknown keyword 'ptiles' (span takes hosts=N, ptile=N; did you mean ptile?)",
    ),
    (
        "span given twice",
        "rusage[mem=20] span[ptile=4] span[hosts=1]",
        SYNTAX,
        29,
        "span[",
        "span[...]",
        "given twice (put both keywords in one span[...], joined by ':')",
    ),
    (
        "a misspelt section",
        "selct[mem>4]",
        SYNTAX,
        5,
        "[",
        "selct[...]",
        "not a section (did you mean select[...]?)",
    ),
    (
        "an unknown section",
        "foo[a]",
        SYNTAX,
        3,
        "[",
        "foo[...]",
        "not a section (the sections are select[...], order[...], rusage[...], span[...], same[...], cu[...], affinity[...])",
    ),
    (
        "an unknown section after a section",
        "select[mem>4] foo[bar]",
        SYNTAX,
        14,
        "foo",
        "foo[...]",
        "not a section (the sections are select[...], order[...], rusage[...], span[...], same[...], cu[...], affinity[...])",
    ),
    (
        "&& between sections",
        "select[mem>4] && select[gpu]",
        SYNTAX,
        14,
        "&&",
        "after select[...]",
        "'&&' between sections (join conditions inside one select[...])",
    ),
    (
        "a bare select after a section",
        "rusage[mem=20] mem>4",
        SYNTAX,
        15,
        "mem",
        "after rusage[...]",
        "'mem': a select expression without its keyword must come first (or write select[...])",
    ),
    (
        "compound parts without +",
        "2*{select[a]} 3*{-}",
        SYNTAX,
        14,
        "3*{",
        "compound",
        "unexpected '3*{' (parts are joined by '+': n1*{...} + n2*{...})",
    ),
    (
        "a number after + in a compound",
        "2*{-} + 3",
        SYNTAX,
        8,
        "3",
        "compound",
        "unexpected '3' after '+' (expected a part n*{...})",
    ),
    (
        "a compound part without a count",
        "*{-}",
        SYNTAX,
        0,
        "*",
        "compound",
        "'*' has no task count before it (a part is n*{...})",
    ),
    (
        "an empty compound part",
        "2*{}",
        SYNTAX,
        3,
        "}",
        "compound",
        "the part '2*{}' is empty (write 2*{-} for no requirement)",
    ),
    (
        "an unbraced compound as an alternative",
        "2*{-} || {-}",
        SYNTAX,
        6,
        "||",
        "compound",
        "an alternative that is a compound is braced: {n*{...} + ...} || {...}",
    ),
    (
        "alternatives without ||",
        "{select[a]} {select[b]}",
        SYNTAX,
        12,
        "{",
        "alternatives",
        "unexpected '{' (alternatives are joined by '||': {...} || {...})",
    ),
    (
        "an unclosed compound part",
        "2*{select[a]",
        SYNTAX,
        2,
        "{",
        "compound",
        "'{' is never closed",
    ),
    (
        "nested brackets in cu",
        "cu[x[1]]",
        SYNTAX,
        2,
        "[",
        "cu[...]",
        "cu[] sections are not supported",
    ),
]


@pytest.mark.parametrize(
    ("text", "kind", "position", "token", "place", "problem"),
    [case[1:] for case in BAD],
    ids=[case[0] for case in BAD],
)
def test_bad_request_names_its_place_and_problem(
    text: str, kind: ResreqErrorKind, position: int, token: str, place: str, problem: str
) -> None:
    assert parse_resreq(text) == ResreqError(
        kind=kind,
        position=position,
        token=token,
        message=f"bad resource requirement at position {position}: {place}: {problem}",
    )


def documented_bad_strings() -> list[tuple[str, str]]:
    """(string, detail) rows of the example table in docs/resreq.md "Bad strings"."""
    doc = (Path(__file__).resolve().parents[3] / "docs" / "resreq.md").read_text()
    section = doc.split("## Bad strings", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = re.findall(r"\| `((?:[^`]|\\\|)+)` ", line + " ")
        if len(cells) == 2:
            rows.append((cells[0].replace("\\|", "|"), cells[1].replace("\\|", "|")))
    return rows


@pytest.mark.parametrize(
    ("text", "detail"), documented_bad_strings(), ids=[t for t, _ in documented_bad_strings()]
)
def test_the_documented_bad_strings_give_the_documented_details(text: str, detail: str) -> None:
    result = parse_resreq(text)
    assert isinstance(result, ResreqError)
    assert result.message == f"bad resource requirement at position {result.position}: {detail}"


def test_the_documentation_shows_bad_strings() -> None:
    assert len(documented_bad_strings()) >= 20


def test_text_longer_than_the_limit() -> None:
    text = "a" * (MAX_TEXT + 1)
    assert parse_resreq(text) == ResreqError(
        kind=SYNTAX,
        position=MAX_TEXT,
        token="",
        message=f"bad resource requirement at position {MAX_TEXT}: longer than {MAX_TEXT} characters",
    )


def test_canonical_text_longer_than_the_limit() -> None:
    text = "rusage[" + ":".join(f"r{i}=1E" for i in range(1000)) + "]"
    assert len(text) <= MAX_TEXT
    assert parse_resreq(text) == ResreqError(
        kind=SYNTAX,
        position=0,
        token="",
        message=f"bad resource requirement at position 0: longer than {MAX_TEXT} characters when written canonically",
    )


@pytest.mark.parametrize(
    ("text", "position", "token"),
    [
        # x has depth 1; the negation that would make depth MAX_DEPTH + 1 is refused
        ("!" * (MAX_DEPTH + 50) + "x", 50, "!"),
        # the k-th '+' (at 2k - 1) makes depth k + 1
        ("a" + "+a" * (MAX_DEPTH + 5), 2 * MAX_DEPTH - 1, "+"),
        ("(" * 2000 + "a" + ")" * 2000, None, None),
    ],
    ids=["a long chain of negations", "a long sum", "deep parentheses add no depth"],
)
def test_expression_depth_limit(text: str, position: int | None, token: str | None) -> None:
    result = parse_resreq(text)
    if position is None:
        assert result == Primary(select=sel("a", Name("a")))
        return
    assert result == ResreqError(
        kind=SYNTAX,
        position=position,
        token=token or "",
        message=f"bad resource requirement at position {position}: select[...]: expression nested deeper than {MAX_DEPTH}",
    )


def test_a_non_string_is_an_error_not_an_exception() -> None:
    bad: Any = None
    result = parse_resreq(bad)
    assert isinstance(result, ResreqError)
    assert result.kind is SYNTAX


# --- property: nothing escapes, and valid results round-trip -------------------------

NAMES = st.sampled_from(
    [
        "mem",
        "swp",
        "swap",
        "cpu",
        "gpu",
        "type",
        "model",
        "LINUX",
        "any",
        "slots",
        "maxslots",
        "ut",
        "r15s",
        "hname",
        "x_1",
        "a.b",
        "order",
        "select",
        "defined",
        "duration",
        "decay",
    ]
)
NUMBERS = st.one_of(
    st.integers(0, 10**7).map(str),
    st.floats(0, 1e9, allow_nan=False).map(repr),
    st.sampled_from(["4G", "1.5gb", "2e3", "1e", "50E", "1e999", ".5", "0", "4mem", "9e18T", "3K"]),
)
ATOMS = st.one_of(
    NAMES,
    NUMBERS,
    st.sampled_from(["'host06-x12'", "'a b'", "''", "'x"]),
    NAMES.map(lambda n: f"defined({n})"),
)
OPERATORS = st.sampled_from(["||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "="])
EXPRESSIONS = st.recursive(
    ATOMS,
    lambda inner: st.one_of(
        st.tuples(inner, OPERATORS, inner).map(lambda t: f"{t[0]} {t[1]} {t[2]}"),
        inner.map(lambda e: f"({e})"),
        inner.map(lambda e: f"!{e}"),
        inner.map(lambda e: f"-{e}"),
    ),
    max_leaves=6,
)
USAGE = st.one_of(
    st.tuples(NAMES, st.sampled_from(["", "-"]), NUMBERS).map(lambda t: f"{t[0]}={t[1]}{t[2]}"),
    st.sampled_from(
        ["duration=5", "duration=10s", "duration=2h", "duration=0", "decay=1", "decay=0"]
    ),
)
SECTIONS = st.one_of(
    EXPRESSIONS.map(lambda e: f"select[{e}]"),
    st.lists(st.tuples(st.sampled_from(["", "-"]), NAMES), min_size=1, max_size=3).map(
        lambda keys: "order[" + ":".join(m + n for m, n in keys) + "]"
    ),
    st.lists(USAGE, min_size=1, max_size=3).map(lambda us: "rusage[" + ":".join(us) + "]"),
    st.lists(
        st.sampled_from(
            [
                "hosts=1",
                "hosts=-1",
                "hosts=3",
                "ptile=4",
                "ptile=0",
                "ptile='!'",
                "block=2",
                "stripe",
            ]
        ),
        min_size=1,
        max_size=2,
    ).map(lambda items: "span[" + ":".join(items) + "]"),
    st.lists(NAMES, min_size=1, max_size=2).map(lambda names: "same[" + ":".join(names) + "]"),
    st.sampled_from(
        ["cu[type=rack]", "rusage[a=1, b=2]", "rusage[a=1 || b=2]", "order[]", "same[ ]"]
    ),
)
SIMPLE = st.one_of(
    st.lists(SECTIONS, min_size=1, max_size=4).map(lambda ss: " ".join(ss)),
    st.tuples(EXPRESSIONS, st.lists(SECTIONS, max_size=2)).map(lambda t: " ".join([t[0], *t[1]])),
)
PART = st.tuples(
    st.sampled_from(["1", "2", "16", "4", "0", "1.5"]), st.one_of(SIMPLE, st.just("-"))
).map(lambda t: f"{t[0]}*{{{t[1]}}}")
COMPOUND = st.lists(PART, min_size=1, max_size=3).map(" + ".join)
ALTERNATIVES = st.lists(st.one_of(SIMPLE, COMPOUND, st.just("-")), min_size=1, max_size=3).map(
    lambda xs: " || ".join(f"{{{x}}}" for x in xs)
)
REQUESTS = st.one_of(SIMPLE, COMPOUND, ALTERNATIVES, st.sampled_from(["", "-", " "]))
NOISE = st.one_of(
    st.sampled_from(list("[]{}()|&=!<>+-*/:,' \t.xE0")),
    st.sampled_from(["||", "&&", "select[", "2*{", "}", "order["]),
    st.text(max_size=3),
)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(REQUESTS)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(text)))
        if draw(st.booleans()):
            text = text[:at] + draw(NOISE) + text[at:]
        else:
            text = text[:at] + text[at + draw(st.integers(1, 4)) :]
    return text


ANY_TEXT = st.one_of(
    REQUESTS,
    mutated(),
    st.text(max_size=60),
    st.text(alphabet="selctordusagpnmhi[]{}()|&=!<>+-*/:,' 0123456789.GKE-", max_size=80),
)


#: The places a message may name (xce_core.resreq.diagnose): a section, an item of one,
#: a word used as a section, the gap after a section, or the structure around sections.
_SECTION = "(?:select|order|rusage|span|same|cu|affinity)"
PLACE = re.compile(
    rf"(?:{_SECTION}\[(?:\.\.\.|[A-Za-z_][A-Za-z0-9_.]*=\.\.\.)\]"
    r"|[A-Za-z_][A-Za-z0-9_.]*\[\.\.\.\]"
    rf"|after {_SECTION}\[\.\.\.\]"
    r"|compound|alternatives): \S"
)


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_TEXT)
def test_nothing_escapes_and_valid_results_round_trip(text: str) -> None:
    result = parse_resreq(text)
    assert isinstance(result, Primary | Compound | Alter | ResreqError)
    if isinstance(result, ResreqError):
        assert 0 <= result.position <= len(text)
        assert text[result.position : result.position + len(result.token)] == result.token
        prefix = f"bad resource requirement at position {result.position}: "
        assert result.message.startswith(prefix)
        assert "\n" not in result.message
        # Every refusal names its place; none comes from the catch-all that stands in
        # for an exception inside the parser (a crash there would hide behind it).
        assert PLACE.match(result.message, len(prefix)), result.message
    else:
        again = parse_resreq(result.text)
        assert again == result
        assert again is result
        assert parse_resreq(text) is result
