"""Who may do what on the bus and in Redis: the least-privilege table of the live
services, from which ``xce_kit.bus_config`` writes the nats-server and Redis ACL
configurations.

Every subject, stream and key comes from the bus contract (``xce_schemas``), so the
table follows it. One NATS user and one Redis user per service (``ROLES``):

- ``core`` publishes ``xce.decisions.>``, ``xce.record.>`` and
  ``xce.deadletter.core``, consumes ``XCE_EVENTS``, uses the lease bucket
  ``XCE_CORE_LEASE``, and answers on ``xce.core.record``;
- ``bridge`` publishes ``xce.events.>``, ``xce.ctl.decisions.*`` and
  ``xce.deadletter.bridge``, and consumes ``XCE_CONTROLLER`` and ``XCE_DECISIONS``;
- ``recorder`` answers on ``xce.recorder.control``, asks the core on
  ``xce.core.record``, and consumes ``XCE_RECORD``;
- ``admin`` asks the recorder on ``xce.recorder.control``;
- ``controller`` (cluster controllers, the live emulator) publishes ``xce.ctl.*``,
  subscribes to ``xce.ctl.decisions.*``, and consumes ``XCE_CTL_DECISIONS`` and
  ``XCE_DEADLETTER`` (the refusals of its messages);
- ``ops`` may do everything: operators' tools, never a service.

Besides, every user subscribes to its own inbox only (``xce_kit.auth.inbox_prefix``):
the replies to its requests and the messages it pulls. *Consumes a stream* means the
JetStream API calls a durable pull consumer needs on that stream only (create, look
up, delete its consumers, pull, acknowledge, read a message by sequence, stream
info); *writes* a stream, the info and reads a publisher needs to go on after its
last message. No service user may update, purge or delete a stream.
"""

from __future__ import annotations

from dataclasses import dataclass

from xce_schemas.admin import (
    CORE_STATUS_KEY,
    RECORDER_CONTROL_SUBJECT,
    RECORDER_STATUS_KEY,
    RECORDING_KEY_PREFIX,
)
from xce_schemas.bus import (
    CORE_CHECKPOINT_KEY,
    CORE_RECORD_SUBJECT,
    CORE_RECORDING_KEY,
    CORE_SOURCE,
    DEADLETTER_STREAM,
    DECISIONS_STREAM,
    DECISIONS_SUBJECTS,
    EVENTS_STREAM,
    EVENTS_SUBJECTS,
    RECORD_STREAM,
    RECORD_SUBJECTS,
    deadletter_subject,
)
from xce_schemas.controller import (
    BRIDGE_SOURCE,
    CTL_DECISIONS_STREAM,
    CTL_DECISIONS_SUBJECTS,
    CTL_STREAM,
    CTL_SUBJECTS,
)

#: The KV bucket the core services hold their leader lease in (one leads, the others
#: wait), and the stream JetStream keeps it in.
CORE_LEASE_BUCKET = "XCE_CORE_LEASE"
CORE_LEASE_STREAM = f"KV_{CORE_LEASE_BUCKET}"

_API = "$JS.API"


def stream_owner(stream: str) -> tuple[str, ...]:
    """The API subjects of a service that makes sure ``stream`` exists: its info, and
    creating it (refused by the server when it exists with another configuration)."""
    return (f"{_API}.STREAM.INFO.{stream}", f"{_API}.STREAM.CREATE.{stream}")


def stream_writer(stream: str) -> tuple[str, ...]:
    """The API subjects an ordered publisher of ``stream`` uses besides the stream's
    own subjects: ``stream_owner``'s, and a message by sequence (its last own
    message, to go on after it)."""
    return (*stream_owner(stream), f"{_API}.STREAM.MSG.GET.{stream}")


def stream_consumer(stream: str, *, ephemeral: bool = False) -> tuple[str, ...]:
    """The API subjects of a pull consumer of ``stream``: ``stream_writer``'s, its
    durable consumers (create, info, delete, pull) and the acknowledgements of their
    deliveries; with ``ephemeral``, creating consumers without a durable name too
    (nats-py's ``pull_subscribe`` without one, a KV watch)."""
    unnamed = (f"{_API}.CONSUMER.CREATE.{stream}", f"{_API}.CONSUMER.CREATE.{stream}.>")
    return (
        *stream_writer(stream),
        *(unnamed if ephemeral else ()),
        f"{_API}.CONSUMER.DURABLE.CREATE.{stream}.>",
        f"{_API}.CONSUMER.INFO.{stream}.>",
        f"{_API}.CONSUMER.DELETE.{stream}.>",
        f"{_API}.CONSUMER.MSG.NEXT.{stream}.>",
        f"$JS.ACK.{stream}.>",
    )


def kv_bucket(bucket: str) -> tuple[str, ...]:
    """What a user of the KV bucket ``bucket`` publishes: its keys (put, create,
    update, delete), direct and stream reads, watching it (an ordered consumer with
    flow control) and creating it."""
    stream = f"KV_{bucket}"
    return (
        f"$KV.{bucket}.>",
        *stream_consumer(stream, ephemeral=True),
        f"{_API}.DIRECT.GET.{stream}",
        f"{_API}.DIRECT.GET.{stream}.>",
        f"$JS.FC.{stream}.>",
    )


@dataclass(frozen=True, slots=True)
class NatsPermissions:
    """One NATS user's permissions (nats-server ``permissions`` block).

    Attributes:
        publish: subjects it may publish on (wildcards allowed).
        subscribe: subjects it may subscribe to, besides its inbox.
        allow_responses: it may answer the requests it receives (publish once on
            their reply subject), without any other right on replies.
    """

    publish: tuple[str, ...]
    subscribe: tuple[str, ...] = ()
    allow_responses: bool = False


@dataclass(frozen=True, slots=True)
class Role:
    """A user of the bus: a service, the controllers, or the operators.

    Attributes:
        name: the user's name (its folder of secrets, its Redis ACL user).
        what: who runs as it, for the comments of the configurations.
        nats: its NATS permissions (None: every subject).
        redis: its Redis ACL rules after ``on`` and its password (None: no Redis user).
    """

    name: str
    what: str
    nats: NatsPermissions | None
    redis: tuple[str, ...] | None = None


#: What every Redis user may do on its connection (AUTH, HELLO, PING, SELECT, CLIENT
#: SETINFO ...), minus what could harm other connections (CLIENT KILL ...).
_REDIS_CONNECTION = ("resetchannels", "-@all", "+@connection", "-@dangerous")


def _keys(*patterns: str, read_only: bool = False) -> tuple[str, ...]:
    """Redis key patterns (``%R~`` read only, else ``~``)."""
    return tuple(("%R~" if read_only else "~") + pattern for pattern in patterns)


def _commands(*names: str) -> tuple[str, ...]:
    return tuple(f"+{name}" for name in names)


def _prefix(key: str) -> str:
    """``xce:core:snapshot`` → ``xce:core:*``: the key pattern of a key's family."""
    return key.rsplit(":", 1)[0] + ":*"


CORE = Role(
    "core",
    "the core service, xce-core-service",
    NatsPermissions(
        publish=(
            DECISIONS_SUBJECTS,
            RECORD_SUBJECTS,
            deadletter_subject(CORE_SOURCE),
            *stream_consumer(EVENTS_STREAM),
            *stream_writer(DECISIONS_STREAM),
            *stream_writer(RECORD_STREAM),
            *stream_owner(DEADLETTER_STREAM),
            *kv_bucket(CORE_LEASE_BUCKET),
        ),
        subscribe=(CORE_RECORD_SUBJECT,),
        allow_responses=True,
    ),
    redis=(
        # The checkpoint, the recording asked for and the status (all xce:core:*).
        *_keys(*sorted({_prefix(k) for k in (CORE_CHECKPOINT_KEY, CORE_RECORDING_KEY)})),
        *_commands("get", "set", "hset"),
    ),
)

BRIDGE = Role(
    "bridge",
    "the controller bridge, xce-bridge",
    NatsPermissions(
        publish=(
            EVENTS_SUBJECTS,
            CTL_DECISIONS_SUBJECTS,
            deadletter_subject(BRIDGE_SOURCE),
            *stream_writer(EVENTS_STREAM),
            *stream_writer(CTL_DECISIONS_STREAM),
            *stream_owner(DEADLETTER_STREAM),
            *stream_consumer(CTL_STREAM),
            *stream_consumer(DECISIONS_STREAM),
        ),
    ),
)

RECORDER = Role(
    "recorder",
    "the recorder, xce-recorder",
    NatsPermissions(
        publish=(CORE_RECORD_SUBJECT, *stream_consumer(RECORD_STREAM, ephemeral=True)),
        subscribe=(RECORDER_CONTROL_SUBJECT,),
        allow_responses=True,
    ),
    redis=(
        # Its status, and a recording's lines (a Redis stream per recording).
        *_keys(RECORDER_STATUS_KEY, RECORDING_KEY_PREFIX + "*"),
        *_commands("exists", "del", "hset", "hgetall", "xadd", "xrange"),
        # Pipelines in a transaction: MULTI ... EXEC (DISCARD when one fails).
        *_commands("multi", "exec", "discard"),
    ),
)

ADMIN = Role(
    "admin",
    "the admin API, xce-admin",
    NatsPermissions(publish=(RECORDER_CONTROL_SUBJECT,)),
    redis=(*_keys(RECORDER_STATUS_KEY, CORE_STATUS_KEY, read_only=True), "+hgetall"),
)

CONTROLLER = Role(
    "controller",
    "cluster controllers and the live emulator, xce-sched emulate",
    NatsPermissions(
        publish=(
            CTL_SUBJECTS,
            *stream_owner(CTL_STREAM),
            *stream_consumer(CTL_DECISIONS_STREAM),
            *stream_consumer(DEADLETTER_STREAM),
        ),
        subscribe=(CTL_DECISIONS_SUBJECTS,),
    ),
)

OPS = Role(
    "ops",
    "operators' tools (nats CLI, redis-cli, tests); no service runs as it",
    None,
    redis=("~*", "&*", "+@all"),
)

#: Every user, in the order the configurations list them.
ROLES: tuple[Role, ...] = (CORE, BRIDGE, RECORDER, ADMIN, CONTROLLER, OPS)
ROLE_NAMES: tuple[str, ...] = tuple(role.name for role in ROLES)


def role(name: str) -> Role:
    """The role called ``name``.

    Raises:
        KeyError: no such role (the message lists them).
    """
    for each in ROLES:
        if each.name == name:
            return each
    raise KeyError(f"no role {name!r}; roles: {', '.join(ROLE_NAMES)}")


def redis_rules(each: Role) -> tuple[str, ...]:
    """The full ACL rules of ``each``'s Redis user after its password: connection
    commands, then its keys and commands (``()`` when it has no Redis user)."""
    if each.redis is None:
        return ()
    if each is OPS:
        return ("resetchannels", *each.redis)
    return (*_REDIS_CONNECTION, *each.redis)
