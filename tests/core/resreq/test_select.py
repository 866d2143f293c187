"""Select evaluation: operators, units, strings against numbers, booleans, defined(),
missing resources, type==any, division by zero, precedence, and memoisation."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from xce_core.resreq.model import Binary, Name, Num, Primary, Select, Str
from xce_core.resreq.parser import parse_resreq
from xce_core.resreq.select import HostValues, compile_select

HOST: dict[str, float | str | bool] = {
    "slots": 4,
    "maxslots": 8,
    "mem": 8192.0,
    "maxmem": 16384.0,
    "type": "LINUX",
    "model": "XeonE5",
    "hname": "host06-x12",
    "gpu": True,
    "fpga": False,
    "ut": 0.25,
    "zero": 0,
    "rack": "r1",
}


def selects(text: str, host: Mapping[str, float | str | bool] = HOST) -> bool:
    request = parse_resreq(f"select[{text}]")
    assert isinstance(request, Primary), request
    assert request.select is not None
    return compile_select(request.select)(host)


CASES = [
    # comparisons of numbers
    ("mem > 4000", True),
    ("mem > 8192", False),
    ("mem >= 8192", True),
    ("mem < 8192", False),
    ("mem <= 8192", True),
    ("mem == 8192", True),
    ("mem != 8192", False),
    ("4000 < mem", True),
    ("slots > 4", False),
    ("ut < 0.5", True),
    # arithmetic
    ("mem / 2 == 4096", True),
    ("mem * 2 == maxmem", True),
    ("maxmem - mem == 8192", True),
    ("slots + maxslots == 12", True),
    ("-slots == 0 - 4", True),
    ("mem", True),
    ("zero", False),
    ("slots - 4", False),
    # units, converted to MB
    ("mem == 8G", True),
    ("mem == 8GB", True),
    ("mem > 7.9g", True),
    ("mem == 8388608K", True),
    ("maxmem < 1T", True),
    ("mem < 0.0000001E", True),
    # logic and precedence
    ("mem > 4000 && slots > 2", True),
    ("mem > 4000 && slots > 5", False),
    ("mem > 9000 || slots > 2", True),
    ("mem > 9000 || slots > 5", False),
    ("1 || 0 && 0", True),  # && binds tighter: 1 || (0 && 0)
    ("(1 || 0) && 0", False),
    ("!(mem > 9000)", True),
    ("!mem", False),
    ("!!gpu", True),
    ("1 + 2 * 3 == 7", True),
    ("(1 + 2) * 3 == 9", True),
    ("10 - 4 - 3 == 3", True),  # left-associative
    ("2 < 3 == 1", True),  # relational before equality
    # strings
    ("type == LINUX", True),
    ("type == 'LINUX'", True),
    ("type != LINUX", False),
    ("type == AIX", False),
    ("hname == 'host06-x12'", True),
    ("rack < 'r2'", True),
    ("rack", False),  # a string is not true
    ("LINUX == LINUX", True),  # two unknown words compare as strings
    # booleans
    ("gpu", True),
    ("fpga", False),
    ("!fpga", True),
    ("gpu == 1", True),
    ("gpu + gpu == 2", True),
    ("fpga == 0", True),
    ("gpu > fpga", True),
    # missing resources
    ("nvme", False),  # its own name, a string
    ("!nvme", True),  # LSF: an unset boolean resource is 0
    ("nvme > 0", False),  # string against number: undefined
    ("!(nvme > 0)", False),  # undefined stays undefined under !
    ("nvme == nvme", True),
    # defined()
    ("defined(gpu)", True),
    ("defined(fpga)", True),
    ("defined(nvme)", False),
    ("!defined(nvme)", True),
    ("defined(swap)", False),  # alias: swp
    # type==any / local
    ("type == any", True),
    ("type == local", True),
    ("any == type", True),
    ("model == 'any'", True),
    ("type != any", False),
    # type==any folded away inside chains
    ("type == any && mem > 9000", False),
    ("type == any && mem > 4000", True),
    ("type != any || gpu", True),
    ("type != any || fpga", False),
    ("!(type == any) || slots == 4", True),
    ("type == any || mem / 0 > 1", True),
    ("mem / 0 > 1 && type != any", False),
    # three-valued chains of three
    ("mem > 1 && type > 3 && gpu", False),
    ("!(mem > 1 && type > 3 && fpga)", True),  # true && undefined && false = false
    ("!(mem > 1 && type > 3 && gpu)", False),  # true && undefined && true = undefined
    ("fpga || type > 3 || gpu", True),
    ("!(fpga || type > 3 || zero)", False),  # false || undefined || false = undefined
    # comparisons as values
    ("(mem > 1) + (slots > 1) == 2", True),
    ("(mem > 1) == gpu", True),
    # strings against numbers: undefined, never selected, also negated
    ("type > 3", False),
    ("type == 3", False),
    ("type != 3", False),
    ("!(type == 3)", False),
    ("type + 1 > 0", False),
    ("gpu == 'yes'", False),
    # division by zero: undefined
    ("mem / 0 > 1", False),
    ("mem / 0 < 1", False),
    ("!(mem / zero > 1)", False),
    ("mem / zero > 1 || slots == 4", True),  # true || undefined
    ("mem / zero > 1 && slots == 5", False),  # undefined && false
    ("mem / zero > 1 || slots == 5", False),  # undefined || false: undefined
    ("!(mem / zero > 1 || slots == 5)", False),
]


@pytest.mark.parametrize(("text", "expected"), CASES, ids=[text for text, _ in CASES])
def test_select_on_one_host(text: str, expected: bool) -> None:
    assert selects(text) is expected


def test_missing_builtins_and_an_empty_host() -> None:
    assert selects("mem > 0", {}) is False
    assert selects("!gpu", {}) is True
    assert selects("type == any", {}) is True
    assert selects("defined(mem)", {}) is False


def test_odd_values_and_huge_numbers_never_raise() -> None:
    host = {"huge": 10**400, "nan": float("nan"), "inf": float("inf"), "other": object()}
    odd: HostValues = host  # type: ignore[assignment]
    assert selects("huge / 3 > 1", odd) is False  # int too large for a float: undefined
    assert selects("huge > 1", odd) is True
    assert selects("nan", odd) is False
    assert selects("nan > 1 || nan <= 1", odd) is False
    assert selects("inf - inf == 0", odd) is False  # NaN: undefined
    assert selects("inf > 1e18", odd) is True
    assert selects("other", odd) is False
    assert selects("other == other", odd) is False
    assert selects("defined(other)", odd) is True


class Exploding(Mapping[str, float | str | bool]):
    """A mapping whose every lookup fails: evaluation must still return False."""

    def __getitem__(self, key: str) -> float:
        raise RuntimeError("boom")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("boom")

    def __len__(self) -> int:
        return 1

    def get(self, key: str, default: object = None) -> float:
        raise RuntimeError("boom")


def test_a_failing_mapping_is_not_selected() -> None:
    assert selects("mem > 1", Exploding()) is False
    assert selects("gpu", Exploding()) is False


def test_hand_made_nodes_never_raise() -> None:
    weird = Select(expr=Binary("%", Name("mem"), Num(2)), text="mem % 2")
    assert compile_select(weird)(HOST) is False
    string_op = Select(expr=Binary("<", Str("a"), Num(1)), text="'a' < 1")
    assert compile_select(string_op)(HOST) is False


def test_one_select_over_many_hosts() -> None:
    hosts: list[HostValues] = [
        {"mem": float(i), "gpu": i % 2 == 0, "type": "LINUX"} for i in range(1000)
    ]
    request = parse_resreq("select[mem >= 500 && gpu && type == LINUX]")
    assert isinstance(request, Primary) and request.select is not None
    selected = compile_select(request.select)
    assert [i for i, host in enumerate(hosts) if selected(host)] == list(range(500, 1000, 2))


def test_each_distinct_select_is_compiled_once() -> None:
    compile_select.cache_clear()
    spellings = ["select[mem>4G && gpu]", "mem > 4096 && gpu", "select [ mem>4GB&&gpu ]"]
    selects_ = []
    for text in spellings:
        request = parse_resreq(text)
        assert isinstance(request, Primary) and request.select is not None
        selects_.append(request.select)
    functions = [compile_select(s) for s in selects_]
    other = parse_resreq("select[mem>4G]")
    assert isinstance(other, Primary) and other.select is not None
    other_function = compile_select(other.select)
    info = compile_select.cache_info()
    assert (info.misses, info.hits) == (2, 2)
    assert functions[0] is functions[1] is functions[2]
    assert other_function is not functions[0]
    # an equal Select built by hand (not the shared object) hits the same entry
    by_hand = Select(expr=selects_[0].expr, text=selects_[0].text)
    assert by_hand is not selects_[0]
    assert compile_select(by_hand) is functions[0]
