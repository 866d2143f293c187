"""Backfill policies are objects registered by name (``xce_core.backfill.policy``):
the five built-ins are five factories, a sixth registers in a few lines, the wire
carries a name, a depth and parameters that the registry checks; and the one
parameter of ``hybrid`` and ``conservative``, Mu'alem and Feitelson's compression.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import Any

import orjson
import pytest
from xce_core.backfill import Policy
from xce_core.core import SchedCore
from xce_core.errors import ConfigError, EventError
from xce_core.in_tree import in_tree_registry
from xce_core.snapshot import load_snapshot, save_snapshot
from xce_driver.simulate import run_simulation
from xce_driver.workloads.lublin import generate_lublin
from xce_driver.workloads.mapping import map_trace

from tests.builders import NS, Scenario, cluster, job_spec


def starts_and_reservations(sc: Scenario) -> dict[int, int]:
    """Each job's reservation start, s."""
    return {j: r.start_ts // NS for j, r in sc.core.state.reservations.items()}


def compression_case(params: dict[str, Any]) -> tuple[Scenario, list[Any], dict[int, int]]:
    """Four one-slot hosts. At 0 R1.T2.L100 and R2.T2.L50 start. At 1 A.T4.L100 is
    reserved at 100 and B.T2.L45 at 50 (a hole before A). At 10 R1 ends early, and
    the round at 10 is returned with the reservations after it.

    Planned afresh, A moves to 50 and B, whose window would then meet A's, to 150:
    later than promised. Compressed, B's promise stands while A is planned again:
    A moves to 95 (the first start that leaves B its room), and B, planned around A,
    starts now."""
    sc = (
        cluster()
        .hosts_n(4)
        .configure(backfill="conservative", backfill_params=params)
        .job(1, tasks=2, run_limit_s=100)  # R1.T2.L100  ends early, at 10
        .job(2, tasks=2, run_limit_s=50)  # R2.T2.L50   ends at 50
        .build()
    )
    sc.round(0)
    sc.submit(
        job_spec(3, tasks=4, run_limit_s=100, submit_s=1),  # A.T4.L100  reserved at 100
        job_spec(4, tasks=2, run_limit_s=45, submit_s=1),  # B.T2.L45   reserved at 50
        at_s=1,
    )
    sc.round(1)
    assert starts_and_reservations(sc) == {3: 100, 4: 50}
    sc.finish(1, at_s=10)
    made = sc.round(10)
    return sc, made, starts_and_reservations(sc)


def test_planned_afresh_a_reservation_can_move_later() -> None:
    _, made, reservations = compression_case({})
    assert made == [("PEND", 4, "RESERVED")]
    assert reservations == {3: 50, 4: 150}


def test_compressed_no_reservation_moves_later() -> None:
    _, made, reservations = compression_case({"compress": True})
    assert made == [("DISPATCH", 4, ("h1", "h2"))]
    assert reservations == {3: 95}


@pytest.mark.parametrize("compress", [False, True], ids=["afresh", "compressed"])
def test_with_limits_that_overestimate_compression_never_starts_a_job_late(compress: bool) -> None:
    """Every job ends early (its limit is twice its run time) and none overruns: with
    compression no job starts after the first start predicted for it; planned
    afresh some do (so this test can tell them apart)."""
    workload = map_trace(generate_lublin(600, nodes=32, seed=4), hosts=32)
    jobs = tuple(replace(job, run_limit_s=2 * job.run_s + 1) for job in workload.jobs)
    workload = replace(workload, jobs=jobs)
    result = run_simulation(
        workload,
        source="gen",
        backfill="conservative",  # type: ignore[arg-type]
        backfill_params={"compress": True} if compress else {},
    )
    records = result.records.values()
    late = [
        r.jobid
        for r in records
        if r.first_predicted_start_s is not None
        and r.start_s is not None
        and r.start_s > r.first_predicted_start_s
    ]
    assert all(r.start_s is not None for r in records)
    assert bool(late) is not compress


def test_a_sixth_policy_registers_in_a_few_lines_and_runs() -> None:
    """``two_ahead``: reservations on counts for the first two blocked jobs, what
    ``hybrid`` with depth 2 does, under a name of its own."""
    registry = in_tree_registry()
    registry.backfill_policies.register(
        "two_ahead", lambda depth, params: Policy("two_ahead", 2, on_counts=True)
    )

    def run(backfill: str, depth: int | None) -> tuple[list[Any], dict[int, int]]:
        sc = (
            cluster()
            .hosts_n(9)
            .configure(backfill=backfill, reservation_depth=depth)
            .job(1, tasks=6, run_limit_s=100)
            .build(registry=registry)
        )
        sc.round(0)
        sc.submit(
            *(job_spec(j, tasks=5 + j, run_limit_s=10, submit_s=1) for j in (2, 3, 4)),
            job_spec(5, tasks=1, run_limit_s=1000, submit_s=1),
            at_s=1,
        )
        return sc.round(1), starts_and_reservations(sc)

    mine = run("two_ahead", None)
    assert mine == run("hybrid", 2)
    assert mine[0][-1] == ("DISPATCH", 5, ("h7",))  # J4 got no reservation: J5 starts
    assert mine[1] == {2: 100, 3: 110}


def config_push(**config: Any) -> dict[str, Any]:
    return {"type": "CONFIG_PUSH", "ts": 0, "payload": {"config": config}}


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"backfill": "nope"}, "unknown backfill policy 'nope'; known: conservative, easy"),
        (
            {"backfill": "easy", "backfill_params": {"compress": True}},
            "backfill policy 'easy' takes no parameter 'compress' (it takes: none)",
        ),
        (
            {"backfill": "conservative", "backfill_params": {"bogus": 1}},
            "backfill policy 'conservative' takes no parameter 'bogus' (it takes: compress)",
        ),
        (
            {"backfill": "conservative", "backfill_params": {"compress": 1}},
            "backfill policy 'conservative': compress is true or false",
        ),
        (
            {"queues": [{"name": "normal", "backfill": "hybird"}]},
            "unknown backfill policy 'hybird'",
        ),
    ],
    ids=[
        "unknown name",
        "a parameter easy does not take",
        "an unknown parameter",
        "not a bool",
        "a queue's",
    ],
)
def test_a_policy_the_registry_refuses_changes_nothing(
    config: dict[str, Any], message: str
) -> None:
    core = SchedCore(on_decision=lambda d: None)
    core.push_event(config_push(backfill="easy"))
    before = save_snapshot(core).model_dump_json()
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        core.push_event(config_push(**config))
    assert save_snapshot(core).model_dump_json() == before
    assert core.state.policies[None].name == "easy"


def test_a_snapshot_keeps_the_parameters_and_the_standing_reservations() -> None:
    sc, _, _ = compression_case({"compress": True})
    text = save_snapshot(sc.core).model_dump_json()
    assert orjson.loads(text)["config"]["backfill_params"] == {"compress": True}
    copy = load_snapshot(text, on_decision=list.append)
    assert copy.state.policies == sc.core.state.policies
    assert copy.state.policies[None].compress
    assert save_snapshot(copy).model_dump_json() == text


def test_the_wire_leaves_out_parameters_that_are_not_given() -> None:
    """A configuration without parameters is written as before they existed (older
    recordings compare equal)."""
    core = SchedCore(on_decision=lambda d: None)
    core.push_event(config_push(backfill="conservative"))
    config = orjson.loads(save_snapshot(core).model_dump_json())["config"]
    assert "backfill_params" not in config and config["backfill"] == "conservative"


def _raises(depth: int | None, params: Any) -> Policy:
    raise RuntimeError("site policy misconfigured")


def _not_a_policy(depth: int | None, params: Any) -> Policy:
    return "hello"  # type: ignore[return-value]


def _no_arguments() -> Policy:
    return Policy("x", 1)


@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (_raises, "cannot be made: RuntimeError: site policy misconfigured"),
        (_not_a_policy, "cannot be made: its factory returned str, not a Policy"),
        (_no_arguments, "cannot be made: TypeError: "),
    ],
    ids=["it raises", "it returns something else", "it takes no arguments"],
)
def test_a_plugin_factory_that_fails_is_one_configuration_error(factory: Any, message: str) -> None:
    """A third party's bug is a ConfigError naming the policy (one line at the
    command line), never a traceback from inside the core."""
    registry = in_tree_registry()
    registry.backfill_policies.register("site", factory)
    core = SchedCore(on_decision=lambda d: None, registry=registry)
    with pytest.raises(ConfigError) as caught:
        core.push_event(config_push(backfill="site"))
    text = str(caught.value)
    assert text.startswith("CONFIG_PUSH rejected: payload.config.backfill: backfill policy 'site'")
    assert message in text and "\n" not in text
    assert core.state.policies[None].name == "greedy"


def test_a_policy_is_named_as_it_is_registered() -> None:
    registry = in_tree_registry()
    registry.backfill_policies.register("renamed", lambda d, p: Policy("other", 2, on_counts=True))
    core = SchedCore(on_decision=lambda d: None, registry=registry)
    core.push_event(config_push(backfill="renamed"))
    assert core.state.policies[None].name == "renamed"


@pytest.mark.parametrize(
    ("queue", "message"),
    [
        ({"reservation_depth": 3}, "reservation_depth is a hybrid backfill policy's"),
        ({"backfill_params": {"compress": True}}, "backfill_params are the queue's own"),
    ],
    ids=["a depth", "parameters"],
)
def test_a_queue_setting_that_would_change_nothing_is_refused(
    queue: dict[str, Any], message: str
) -> None:
    """Without a policy of its own, a queue's depth or parameters would do nothing."""
    core = SchedCore(on_decision=lambda d: None)
    with pytest.raises(EventError, match=message):
        core.push_event(config_push(backfill="conservative", queues=[{"name": "q", **queue}]))


def test_the_command_line_names_a_broken_plugin_not_an_unknown_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One broken package must not make a working plugin's name 'not a policy'."""
    from xce_driver import cli

    def broken() -> Any:
        raise ConfigError("backfill policy plugin 'x' (site.nomodule:f) cannot be loaded: boom")

    monkeypatch.setattr(cli, "load_registry", broken)
    with pytest.raises(argparse.ArgumentTypeError, match=r"plugin 'x' .* cannot be loaded: boom"):
        cli._backfill_policy("two_ahead")
    assert cli._backfill_policy("easy") == "easy"  # a built-in needs no plugin loaded
