"""Stream limits: how ``StreamLimits`` becomes the ``StreamConfig`` nats-server gets,
and how the services' ``--stream-*`` options are read (a bad value is one argparse
line, exit 2)."""

from __future__ import annotations

import argparse

import pytest
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamState
from xce_driver.live.controller_bus import ctl_stream_configs
from xce_kit.arguments import add_service_arguments, stream_limits
from xce_kit.options import OneLineParser, run_service
from xce_kit.retention import RetentionError, first_seq_of, lost_after
from xce_kit.streams import (
    DECISIONS_DUPLICATE_WINDOW_S,
    DEFAULT_LIMITS,
    EVENTS_DUPLICATE_WINDOW_S,
    NO_LIMITS,
    StreamLimits,
    limits_of,
    record_stream_config,
    stream_config,
    stream_configs,
)
from xce_schemas.bus import RECORD_DUPLICATE_WINDOW_S

from tests.driver.live.test_options import assert_one_line_error

GIB = 2**30
WEEK_S = 7 * 86400


# --- limits -> StreamConfig ---------------------------------------------------------------


@pytest.mark.parametrize(
    "limits, max_age_ns, max_bytes, replicas",
    [
        (NO_LIMITS, 0, -1, 1),
        (DEFAULT_LIMITS, WEEK_S * 10**9, GIB, 1),
        (StreamLimits(max_age_s=0.5, max_bytes=4096, replicas=3), 500_000_000, 4096, 3),
    ],
    ids=["no limits: nothing expires", "the services' defaults", "tiny limits on a cluster"],
)
def test_limits_become_the_stream_config_the_server_gets(
    limits: StreamLimits, max_age_ns: int, max_bytes: int, replicas: int
) -> None:
    config = stream_config("S", "s.>", 1.0, limits)
    sent = config.as_dict()  # what nats-py sends: durations in ns
    assert sent["max_age"] == max_age_ns  # 0: no limit
    assert (sent["max_bytes"], sent["num_replicas"]) == (max_bytes, replicas)
    assert config.retention == RetentionPolicy.LIMITS and config.storage == StorageType.FILE
    # The oldest go first: a full stream refusing events would stop scheduling.
    assert config.discard == DiscardPolicy.OLD
    assert limits_of(config) == limits


@pytest.mark.parametrize(
    "max_age_s, window_s",
    [(0.0, 3600.0), (WEEK_S, 3600.0), (60.0, 60.0), (0.5, 0.5)],
    ids=["no age: window as asked", "a week: window as asked", "a minute", "half a second"],
)
def test_the_duplicate_window_never_exceeds_the_max_age(max_age_s: float, window_s: float) -> None:
    # nats-server refuses a stream whose duplicate window is longer than its max age.
    config = stream_config("S", "s.>", 3600.0, StreamLimits(max_age_s=max_age_s))
    assert config.duplicate_window == window_s


def test_every_stream_of_the_bus_takes_the_limits() -> None:
    limits = StreamLimits(max_age_s=86400, max_bytes=GIB, replicas=3)
    configs = [
        *stream_configs(limits=limits),
        *ctl_stream_configs(limits),
        record_stream_config(limits=limits),
    ]
    names = [config.name for config in configs]
    assert names == [
        "XCE_EVENTS",
        "XCE_DECISIONS",
        "XCE_DEADLETTER",
        "XCE_CONTROLLER",
        "XCE_CTL_DECISIONS",
        "XCE_RECORD",
    ]
    assert all(limits_of(config) == limits for config in configs)
    windows = [configs[0].duplicate_window, configs[1].duplicate_window]
    assert windows == [EVENTS_DUPLICATE_WINDOW_S, DECISIONS_DUPLICATE_WINDOW_S]
    assert configs[-1].duplicate_window == RECORD_DUPLICATE_WINDOW_S


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"max_age_s": -1.0}, "max age must be 0 (forever) or more seconds, not -1.0"),
        ({"max_age_s": float("inf")}, "max age must be 0 (forever) or more seconds, not inf"),
        ({"max_bytes": 0}, "max bytes must be -1 (no limit) or positive, not 0"),
        ({"max_bytes": -2}, "max bytes must be -1 (no limit) or positive, not -2"),
        ({"replicas": 0}, "replicas must be 1 to 5, not 0"),
        ({"replicas": 6}, "replicas must be 1 to 5, not 6"),
    ],
    ids=["negative age", "infinite age", "zero bytes", "below -1 bytes", "no replica", "six"],
)
def test_impossible_limits_are_refused(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError) as refused:
        StreamLimits(**kwargs)  # type: ignore[arg-type]
    assert str(refused.value) == message


def test_limits_read_in_words() -> None:
    assert str(NO_LIMITS) == "no age or size limit, 1 replica"
    assert str(DEFAULT_LIMITS) == f"max age {WEEK_S} s, max bytes {GIB}, 1 replica"
    assert str(StreamLimits(max_bytes=100, replicas=3)) == "max bytes 100, 3 replicas"
    assert not NO_LIMITS.bounded and DEFAULT_LIMITS.bounded


# --- what retention dropped -----------------------------------------------------------------


@pytest.mark.parametrize(
    "state, first",
    [
        (StreamState(messages=0, bytes=0, first_seq=0, last_seq=0, consumer_count=0), 1),
        (StreamState(messages=0, bytes=0, first_seq=26, last_seq=25, consumer_count=0), 26),
        (StreamState(messages=7, bytes=931, first_seq=19, last_seq=25, consumer_count=1), 19),
    ],
    ids=["never held a message", "every message expired", "holds 19..25"],
)
def test_first_seq_of_a_stream(state: StreamState, first: int) -> None:
    assert first_seq_of(state) == first


@pytest.mark.parametrize(
    "position, first, lost",
    [(0, 1, range(0)), (18, 19, range(0)), (25, 19, range(0)), (2, 19, range(3, 19))],
    ids=["nothing read, nothing dropped", "read up to the head", "ahead", "3..18 dropped"],
)
def test_lost_after_a_position(position: int, first: int, lost: range) -> None:
    assert list(lost_after(position, first)) == list(lost)


# --- the options ----------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    built = OneLineParser(prog="xce-svc")
    add_service_arguments(built)
    return built


@pytest.mark.parametrize(
    "argv, limits",
    [
        ([], DEFAULT_LIMITS),
        (
            ["--stream-max-age", "0", "--stream-max-bytes", "-1", "--stream-replicas", "1"],
            NO_LIMITS,
        ),
        (
            ["--stream-max-age", "3600", "--stream-max-bytes", "1GiB", "--stream-replicas", "3"],
            StreamLimits(3600.0, GIB, 3),
        ),
        (["--stream-max-bytes", "500MB"], StreamLimits(WEEK_S, 500_000_000)),
        (["--stream-max-bytes", "1048576"], StreamLimits(WEEK_S, 2**20)),
        (
            ["--stream-max-age", "3155760000", "--stream-max-bytes", str(2**63 - 1)],
            StreamLimits(3155760000.0, 2**63 - 1),
        ),
    ],
    ids=[
        "defaults",
        "no limits",
        "an hour, 1 GiB, 3 copies",
        "decimal unit",
        "plain bytes",
        "the largest limits",
    ],
)
def test_stream_options_become_limits(argv: list[str], limits: StreamLimits) -> None:
    assert stream_limits(parser().parse_args(argv)) == limits


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--stream-max-bytes", "0"], "a size must be positive (or -1: no limit), not 0"),
        (["--stream-max-bytes", "-2"], "'-2' is not a size in bytes"),
        (["--stream-max-bytes", "lots"], "'lots' is not a size in bytes (e.g. 1073741824, 8GiB"),
        (["--stream-max-bytes", "8XB"], "'8XB' is not a size in bytes"),
        (["--stream-max-age", "-1"], "-1 is not a finite number of seconds, 0 or more"),
        (["--stream-max-age", "nan"], "nan is not a finite number of seconds, 0 or more"),
        (["--stream-max-age", "7d"], "'7d' is not a number of seconds"),
        (["--stream-max-age", "1e100"], "max age must be 0 (forever) or 1 to 3155760000 s"),
        (["--stream-max-age", "0.001"], "max age must be 0 (forever) or 1 to 3155760000 s"),
        (
            ["--stream-max-bytes", "99999999999999999999999"],
            "-1 (no limit) or 1048576 (1MiB) to 9223372036854775807 (2**63-1) bytes",
        ),
        (["--stream-max-bytes", "100"], "-1 (no limit) or 1048576 (1MiB) to"),
        (["--stream-max-bytes", "1MB"], "-1 (no limit) or 1048576 (1MiB) to"),
        (["--stream-replicas", "0"], "argument --stream-replicas: must be 1 or more, not 0"),
        (["--stream-replicas", "6"], "argument --stream-replicas: must be 5 or less, not 6"),
        (["--stream-replicas", "two"], "argument --stream-replicas: 'two' is not a whole number"),
    ],
    ids=[
        "zero bytes",
        "negative bytes",
        "no number",
        "unknown unit",
        "negative age",
        "nan age",
        "age with a unit",
        "age of 1e100 s",
        "age of 1 ms",
        "bytes beyond int64",
        "a 100-byte stream",
        "1 MB is less than 1 MiB",
        "no replica",
        "six replicas",
        "replicas in words",
    ],
)
def test_a_bad_stream_option_is_one_line(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_one_line_error(parser(), argv, f"argument {argv[0]}: ", capsys)
    assert_one_line_error(parser(), argv, message, capsys)


def test_a_service_stopped_by_retention_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def service() -> None:
        raise RetentionError("XCE_EVENTS: messages 3..18 were dropped before consumer c read them")

    assert run_service("xce-svc", service(), nats="nats://127.0.0.1:4222") == 2
    err = capsys.readouterr().err
    assert (
        err
        == "xce-svc: error: XCE_EVENTS: messages 3..18 were dropped before consumer c read them\n"
    )
