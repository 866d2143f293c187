"""Benchmark: resource-requirement parsing, select evaluation, and a fuzz run.

    python -m benchmarks.bench_resreq [--distinct 21000] [--hosts 10000] [--fuzz 100000] [--runs 3]

(a) Parse-and-compile rate: DISTINCT different request strings (a mix of shapes, each
    string new to the process, so neither the text cache nor the compile cache helps)
    through ``parse_resreq`` and, when there is a select, ``compile_select``; per shape,
    and all shapes shuffled together. Target 20,000 per second. Each figure is the best
    of RUNS timed runs on fresh strings (the machine may be shared). Baselines in the
    same process: ``str.split`` and ``json.loads`` of an equivalent JSON document of
    each request.
(b) One compiled select evaluated on HOSTS host mappings. Target 10 ms.
(c) Fuzz: FUZZ generated strings (grammar-shaped, mutated, random) through
    ``parse_resreq``, counting the outcomes; every valid result must round-trip through
    its canonical text. Exits 1 if anything raised or failed to round-trip.

Times are CPU time of this process (``time.process_time``), so that a shared machine
(waiting for a CPU) does not distort them; each parse figure is the best of RUNS.
Prints figures only; no timing is asserted.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections import Counter
from collections.abc import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from xce_core.resreq.model import Alter, Compound, Primary, ResreqError
from xce_core.resreq.parser import parse_resreq
from xce_core.resreq.select import HostValues, compile_select

#: The benchmark clock: CPU time of this process, so that other work on a shared machine
#: (waiting for a CPU) does not count against the figures.
clock = time.process_time


# --- (a) distinct realistic requests -------------------------------------------------

SHAPES: dict[str, Callable[[int, random.Random], str]] = {
    "select, one comparison": lambda i, r: f"select[mem>{i}]",
    "bare select + order": lambda i, r: f"mem > {i} && type==LINUX order[-slots]",
    "select + rusage": lambda i, r: (
        f"select[mem > {i}MB && ncpus >= {r.randint(1, 64)}] "
        f"rusage[mem={r.randint(1, 64)}G:duration={r.randint(1, 120)}]"
    ),
    "span + select": lambda i, r: (
        f"span[ptile={r.randint(1, 64)}] select[defined(gpu{i}) && slots>=2]"
    ),
    "all five sections": lambda i, r: (
        f"select[(mem > {i} || swap > 4G) && type == LINUX && !maint] order[-slots:ut] "
        f"rusage[mem={r.randint(1, 9999)}:lic=1] span[hosts=1] same[model]"
    ),
    "compound": lambda i, r: (
        f"{r.randint(1, 8)}*{{select[gpu] rusage[mem={i}]}} + {r.randint(1, 64)}*{{-}}"
    ),
    "alternative": lambda i, r: (
        f"{{select[mem>{i}] span[hosts=1]}} || {{span[ptile={r.randint(1, 32)}]}}"
    ),
}


def distinct_requests(count: int, seed: int) -> dict[str, list[str]]:
    """``count`` distinct strings, split evenly over SHAPES (numbers offset by ``seed``)."""
    rng = random.Random(seed)
    per_shape = -(-count // len(SHAPES))
    base = seed * 10_000_000
    return {
        shape: [make(base + i, rng) for i in range(per_shape)] for shape, make in SHAPES.items()
    }


def parse_and_compile(texts: list[str]) -> float:
    started = clock()
    for text in texts:
        request = parse_resreq(text)
        if isinstance(request, Primary) and request.select is not None:
            compile_select(request.select)
        elif isinstance(request, ResreqError):
            raise SystemExit(f"benchmark request refused: {text!r}: {request.message}")
    return clock() - started


def parse_only(texts: list[str]) -> float:
    started = clock()
    for text in texts:
        parse_resreq(text)
    return clock() - started


def as_json(text: str) -> str:
    """An equivalent JSON document of a request (what a JSON wire form would carry)."""
    request = parse_resreq(text)
    assert not isinstance(request, ResreqError)
    return json.dumps({"resreq": request.text, "sections": request.text.split()})


def best_of(runs: int, measure: Callable[[list[str]], float], texts: list[list[str]]) -> float:
    """The fastest of ``runs`` timings, each on its own fresh list (the machine may be shared)."""
    return min(measure(texts[i]) for i in range(runs))


def bench_parse(count: int, runs: int) -> tuple[Table, bool]:
    parse_and_compile([t for ts in distinct_requests(2_000, seed=1).values() for t in ts])  # warm
    # Every run gets strings it has never seen: seeds 10.. for parse+compile, 20.. parse only.
    compiled = [distinct_requests(count, seed=10 + i) for i in range(runs)]
    parsed = [distinct_requests(count, seed=20 + i) for i in range(runs)]
    every = [
        t
        for sets in (compiled, parsed)
        for by_shape in sets
        for ts in by_shape.values()
        for t in ts
    ]
    assert len(set(every)) == len(every), "requests are not distinct"
    per_run = sum(len(ts) for ts in compiled[0].values())
    table = Table(
        title=f"(a) parse + compile, {per_run:,} distinct requests a run, CPU time, best of "
        f"{runs} (target 20,000/s)"
    )
    for column in ("requests", "count", "per second", "µs each", "parse only µs"):
        table.add_column(column, justify="right")
    for shape in SHAPES:
        seconds = best_of(runs, parse_and_compile, [c[shape] for c in compiled])
        parse_s = best_of(runs, parse_only, [p[shape] for p in parsed])
        n = len(compiled[0][shape])
        table.add_row(
            shape,
            f"{n:,}",
            f"{n / seconds:,.0f}",
            f"{seconds / n * 1e6:.1f}",
            f"{parse_s / n * 1e6:.1f}",
        )
    mixed = [
        [t for ts in distinct_requests(count, seed=30 + i).values() for t in ts]
        for i in range(runs)
    ]
    for texts in mixed:  # shapes interleaved, as a real submission stream would be
        random.Random(0).shuffle(texts)
    seconds = best_of(runs, parse_and_compile, mixed)
    fresh = mixed[0]
    rate = len(fresh) / seconds
    table.add_row(
        "[bold]all shapes mixed[/bold]",
        f"{len(fresh):,}",
        f"[bold]{rate:,.0f}[/bold]",
        f"{seconds / len(fresh) * 1e6:.1f}",
        "",
    )

    def split_all(texts: list[str]) -> float:
        started = clock()
        for text in texts:
            text.split()
        return clock() - started

    def loads_all(documents: list[str]) -> float:
        started = clock()
        for document in documents:
            json.loads(document)
        return clock() - started

    documents = [[as_json(t) for t in texts] for texts in mixed]
    split_s = best_of(runs, split_all, mixed)
    json_s = best_of(runs, loads_all, documents)
    for label, base_s in (("baseline str.split", split_s), ("baseline json.loads", json_s)):
        table.add_row(
            label,
            f"{len(fresh):,}",
            f"{len(fresh) / base_s:,.0f}",
            f"{base_s / len(fresh) * 1e6:.2f}",
            f"parse+compile {seconds / base_s:,.0f}x slower",
        )
    return table, rate >= 20_000


# --- (b) one select over many hosts --------------------------------------------------


def make_hosts(count: int) -> list[HostValues]:
    rng = random.Random(7)
    hosts: list[HostValues] = []
    for i in range(count):
        maxslots = rng.choice([8, 16, 32, 64])
        maxmem = rng.choice([16, 64, 256, 1024]) * 1024.0
        host: dict[str, float | str | bool] = {
            "slots": rng.randint(0, maxslots),
            "maxslots": maxslots,
            "mem": rng.uniform(0, maxmem),
            "maxmem": maxmem,
            "type": rng.choice(["LINUX", "LINUX", "AIX"]),
            "model": rng.choice(["XeonE5", "EPYC", "POWER9"]),
            "hname": f"host{i:05d}",
            "ut": rng.random(),
        }
        if i % 4 == 0:
            host["gpu"] = True
        hosts.append(host)
    return hosts


SELECTS = [
    "select[mem > 4G]",
    "select[mem > 4G && gpu]",
    "select[slots>4 && maxslots < 10 || mem > 10]",
    "select[type == LINUX && model != POWER9 && mem >= 32G && ut < 0.5]",
    "select[(mem - 1024) / maxmem > 0.25 && defined(gpu) && type == any]",
]


def bench_select(count: int) -> tuple[Table, bool]:
    hosts = make_hosts(count)
    table = Table(title=f"(b) one select over {count:,} hosts, CPU time (target 10 ms)")
    for column in ("select", "selected", "ms (best of 5)", "µs per host"):
        table.add_column(column, justify="right")
    all_fast = True
    for text in SELECTS:
        request = parse_resreq(text)
        assert isinstance(request, Primary) and request.select is not None
        selected = compile_select(request.select)
        best = float("inf")
        chosen = 0
        for _ in range(5):
            started = clock()
            chosen = len([host for host in hosts if selected(host)])
            best = min(best, clock() - started)
        all_fast = all_fast and best <= 0.010
        table.add_row(escape(text), f"{chosen:,}", f"{best * 1e3:.2f}", f"{best / count * 1e6:.3f}")
    return table, all_fast


# --- (c) fuzz ------------------------------------------------------------------------

NAMES = ["mem", "swap", "cpu", "gpu", "type", "LINUX", "any", "slots", "ut", "hname", "a.b"]
NUMBERS = ["4", "4G", "1.5gb", "2e3", "1e", "50E", "1e999", ".5", "0", "4mem", "9e18T", "-3"]
OPS = ["||", "&&", "==", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "="]
NOISE = [*"[]{}()|&=!<>+-*/:,' \t.xE0", "||", "&&", "select[", "2*{", "}", "order["]
ALPHABET = "selctordusagpnmhi[]{}()|&=!<>+-*/:,' 0123456789.GKE-\t\x00é"


class Fuzzer:
    """Grammar-shaped, mutated and random request strings from a seeded PRNG."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def expr(self, depth: int = 0) -> str:
        r = self.rng
        if depth > 3 or r.random() < 0.35:
            return r.choice(
                [r.choice(NAMES), r.choice(NUMBERS), "'host06-x12'", f"defined({r.choice(NAMES)})"]
            )
        form = r.randrange(4)
        if form == 0:
            return f"{self.expr(depth + 1)} {r.choice(OPS)} {self.expr(depth + 1)}"
        if form == 1:
            return f"({self.expr(depth + 1)})"
        return f"{r.choice('!-')}{self.expr(depth + 1)}"

    def section(self) -> str:
        r = self.rng
        kind = r.randrange(7)
        if kind == 0:
            return f"select[{self.expr()}]"
        if kind == 1:
            keys = [r.choice(["", "-"]) + r.choice(NAMES) for _ in range(r.randint(0, 3))]
            return f"order[{':'.join(keys)}]"
        if kind == 2:
            usages = [f"{r.choice(NAMES)}={r.choice(NUMBERS)}" for _ in range(r.randint(0, 3))]
            usages += r.sample(
                ["duration=5", "duration=2h", "decay=1", "duration=0"], r.randint(0, 1)
            )
            return f"rusage[{r.choice([':', ':', ':', ',', '||']).join(usages)}]"
        if kind == 3:
            items = r.sample(
                ["hosts=1", "hosts=-1", "hosts=3", "ptile=4", "ptile='!'", "block=2"],
                r.randint(0, 2),
            )
            return f"span[{':'.join(items)}]"
        if kind == 4:
            return f"same[{':'.join(r.sample(NAMES, r.randint(0, 2)))}]"
        if kind == 5:
            return "cu[type=rack]"
        return self.expr()

    def simple(self) -> str:
        return " ".join(self.section() for _ in range(self.rng.randint(1, 4)))

    def request(self) -> str:
        r = self.rng
        form = r.randrange(5)
        if form <= 1:
            return self.simple()
        if form == 2:
            parts = [
                f"{r.choice(['1', '2', '16', '0', '1.5'])}*{{{r.choice([self.simple(), '-'])}}}"
                for _ in range(r.randint(1, 3))
            ]
            return " + ".join(parts)
        if form == 3:
            alternatives = [f"{{{r.choice([self.simple(), '-'])}}}" for _ in range(r.randint(1, 3))]
            return " || ".join(alternatives)
        return r.choice(["", "-", " ", "{-}"])

    def mutate(self, text: str) -> str:
        r = self.rng
        for _ in range(r.randint(1, 3)):
            at = r.randint(0, len(text))
            if r.random() < 0.5:
                text = text[:at] + r.choice(NOISE) + text[at:]
            else:
                text = text[:at] + text[at + r.randint(1, 4) :]
        return text

    def text(self) -> str:
        r = self.rng
        pick = r.random()
        if pick < 0.5:
            return self.request()
        if pick < 0.8:
            return self.mutate(self.request())
        if pick < 0.9:
            return "".join(r.choice(ALPHABET) for _ in range(r.randint(0, 80)))
        return "".join(chr(r.randrange(0, 0x3000)) for _ in range(r.randint(0, 40)))


def bench_fuzz(count: int) -> tuple[Table, bool]:
    fuzzer = Fuzzer(seed=11)
    outcomes: Counter[str] = Counter()
    failures: list[str] = []
    started = clock()
    for _ in range(count):
        text = fuzzer.text()
        try:
            result = parse_resreq(text)
        except BaseException as exc:  # what the benchmark exists to catch
            outcomes["RAISED"] += 1
            failures.append(f"{text!r} raised {exc!r}")
            continue
        if isinstance(result, ResreqError):
            outcomes[f"error: {result.kind.value}"] += 1
            ok = text[result.position : result.position + len(result.token)] == result.token
        else:
            outcomes[type(result).__name__] += 1
            ok = (
                isinstance(result, Primary | Compound | Alter)
                and parse_resreq(result.text) is result
            )
        if not ok:
            outcomes["BAD RESULT"] += 1
            failures.append(f"{text!r} -> {result!r}")
    seconds = clock() - started
    table = Table(title=f"(c) fuzz: {count:,} generated strings in {seconds:.1f} s CPU")
    table.add_column("outcome")
    table.add_column("count", justify="right")
    for outcome, n in sorted(outcomes.items()):
        table.add_row(outcome, f"{n:,}")
    table.add_row("[bold]raised or bad[/bold]", f"[bold]{len(failures):,}[/bold]")
    for failure in failures[:10]:
        table.add_row(f"[red]{escape(failure[:100])}[/red]", "")
    return table, not failures


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--distinct", type=int, default=21_000)
    parser.add_argument("--hosts", type=int, default=10_000)
    parser.add_argument("--fuzz", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3, help="timed runs per figure (best kept)")
    args = parser.parse_args()
    console = Console(width=140)
    parse_table, parse_met = bench_parse(args.distinct, args.runs)
    console.print(parse_table)
    select_table, select_met = bench_select(args.hosts)
    console.print(select_table)
    fuzz_table, fuzz_clean = bench_fuzz(args.fuzz)
    console.print(fuzz_table)
    console.print(
        f"parse+compile target {'met' if parse_met else 'NOT met'}; "
        f"select target {'met' if select_met else 'NOT met'}; "
        f"fuzz {'clean' if fuzz_clean else 'FAILED'}"
    )
    return 0 if fuzz_clean else 1


if __name__ == "__main__":
    raise SystemExit(main())
