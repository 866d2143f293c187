"""A leader lease in NATS KV: one holder at a time, the others wait to take over.

The lease is one key (``leader``) of a KV bucket (``XCE_CORE_LEASE``) whose max
age is the lease time: nats-server 2.9 has no per-key TTL, so a key nobody renews
is removed by the bucket's age limit ``ttl_s`` after its last write. A contender
leads once its ``create`` of the key is stored (the server refuses it while the
key exists); while it leads it renews every ``ttl_s / 3`` with an ``update`` that
names the revision it last wrote, so a write by anyone else in between (a
successor after an expiry, an operator) refuses the renewal. ``release`` deletes
the key; a waiting contender watches the key and tries at once on a delete, and
at the moment the key's last write reaches the age limit (from the write's
server timestamp), polling every ``ttl_s / 10`` when it knows nothing newer (and
ten times as often in the first of those, as the server removes a key some ms late).

**No two leaders.** A holder deposes itself (``leading`` turns False, ``lost`` is
set) ``ttl_s - margin_s`` after it *sent* its last renewal that the server took,
on its own monotonic clock, whether or not it could reach NATS since. The server
stored that renewal no earlier than it was sent, and a successor's ``create`` is
stored only once the key is gone: at least ``ttl_s`` after that store on the
server's clock (or after a delete, which the holder only makes when it has
stopped). So the holder stops ``margin_s`` before anyone can take over, as long
as both clocks run at the same rate (NTP slews rates by at most 500 ppm, a few
ms over a lease; a server whose wall clock is *stepped* forward expires keys
early) and the holder's work checks ``leading`` no more than ``margin_s`` before
it acts (a publish sent then reaches the server within the margin). ``leading``
reads the clock each time it is read, so even an event loop that stalled past
the deadline (no renewal ran) sees it. A renewal refused because the key moved
deposes at once, unless the key holds this very term's value (a renewal stored
whose acknowledgement was lost): then it is adopted, dated from the first try
not acknowledged. The server must not lose a write it acknowledged: a lone
nats-server survives its own SIGKILL (it writes a message to its file before
acknowledging it), not a power cut; on a cluster, give the bucket 3 replicas.

**Terms.** Each term is numbered by the KV revision (stream sequence) of the
``create`` that began it: numbers only grow in a bucket's life. The key's value
is JSON ``{"holder", "nonce", "term"}`` (``term`` from the first renewal on), so a
waiting contender can say who leads.

Failover time: after ``release``, a watch round trip and a ``create`` (a few ms);
after a crash, up to ``ttl_s`` after the last renewal, plus the successor's start.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import math
import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import cast

import orjson
from nats.errors import ConnectionClosedError
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError
from nats.js.kv import KV_DEL, KV_PURGE, KeyValue

from xce_kit.bus_policy import CORE_LEASE_BUCKET
from xce_kit.streams import MAX_REPLICAS, StreamRefused

log = logging.getLogger("xce_kit.lease")

#: The core services' lease bucket (``bus_policy`` lets the core's user at it).
LEASE_BUCKET = CORE_LEASE_BUCKET
#: The one key of a lease bucket.
LEASE_KEY = "leader"
#: Default lease time, s: a crashed leader is replaced within about this long.
DEFAULT_LEASE_TTL_S = 5.0
#: Renewals per lease time.
RENEWALS_PER_TTL = 3
#: A waiting contender that knows nothing newer tries this many times per lease time.
POLLS_PER_TTL = 10
#: Default margin, as a fraction of the lease time (see the module docstring).
DEFAULT_MARGIN = 0.2
#: A bucket's max age may differ from the lease time by this much (nats-server keeps ns).
_TTL_TOLERANCE_S = 1e-3
_BUCKET_NAME = re.compile(r"[A-Za-z0-9_-]+")
#: ``KeyWatcher.updates`` as typed here (nats-py leaves it unannotated).
_Updates = Callable[..., Awaitable["KeyValue.Entry | None"]]


class LeaseConfigError(ValueError):
    """The lease bucket exists with a max age other than the lease time asked: a
    holder would stop at a time unrelated to when its key expires."""


@dataclass(frozen=True, slots=True)
class LeaseHolder:
    """Who holds a lease, as a waiting contender last saw it.

    Attributes:
        holder: the holder's id.
        term: its term number (None: not written yet, before its first renewal).
    """

    holder: str
    term: int | None


async def open_lease_bucket(
    js: JetStreamContext, ttl_s: float, *, replicas: int = 1, bucket: str = LEASE_BUCKET
) -> KeyValue:
    """The lease bucket, created unless it exists (file storage, history 1, max age
    ``ttl_s``, ``replicas`` copies).

    Raises:
        LeaseConfigError: it exists with another max age (the text names both and how
            to fix it).
        xce_kit.streams.StreamRefused: the server refuses to create it (e.g.
            replicas above 1 on a server outside a cluster).
        nats.errors.Error: the server does not answer, or JetStream is off.
    """
    stream = f"KV_{bucket}"
    try:
        info = await js.stream_info(stream)
    except NotFoundError:
        config = KeyValueConfig(
            bucket=bucket, history=1, ttl=ttl_s, replicas=replicas, storage=StorageType.FILE
        )
        try:
            return await js.create_key_value(config)
        except APIError as exc:  # refused, or made meanwhile by another contender
            try:
                info = await js.stream_info(stream)
            except NotFoundError:
                raise StreamRefused(
                    f"lease bucket {bucket} (max age {ttl_s:g} s, {replicas} replicas) "
                    f"cannot be created: {exc.description or exc}"
                ) from None
    have = info.config.max_age or 0.0
    if abs(have - ttl_s) > _TTL_TOLERANCE_S:
        raise LeaseConfigError(
            f"lease bucket {bucket} has a max age of {have:g} s, not the lease time of "
            f"{ttl_s:g} s: start every contender with the same lease time, or delete the "
            f"bucket (nats kv del {bucket}) while none runs"
        )
    if (info.config.num_replicas or 1) != replicas:
        log.info("lease bucket %s has %s replicas; left as it is", bucket, info.config.num_replicas)
    return await js.key_value(bucket)


class Lease:
    """One contender for the lease (see the module docstring for the protocol).

    Args:
        js: a JetStream context of a connected client (reconnecting without end,
            ``xce_kit.connection.connect_nats``).
        holder_id: this contender's id, e.g. ``host:pid`` (logged and shown to the
            others).
        ttl_s: the lease time, s (> 0): the bucket's max age.
        replicas: copies of the bucket on a JetStream cluster (3 on three servers).
        margin_s: a holder stops this long before its key can expire, s; default
            ``ttl_s / 5``; 0 ≤ margin < ``2 * ttl_s / 3`` (a renewal must fit first).
        bucket: the KV bucket's name.

    Raises:
        ValueError: an argument out of range (one line naming it).
    """

    def __init__(
        self,
        js: JetStreamContext,
        holder_id: str,
        ttl_s: float = DEFAULT_LEASE_TTL_S,
        *,
        replicas: int = 1,
        margin_s: float | None = None,
        bucket: str = LEASE_BUCKET,
    ) -> None:
        if not (math.isfinite(ttl_s) and ttl_s > 0):
            raise ValueError(f"lease time must be a positive number of seconds, not {ttl_s}")
        margin = ttl_s * DEFAULT_MARGIN if margin_s is None else margin_s
        if not 0 <= margin < ttl_s * (RENEWALS_PER_TTL - 1) / RENEWALS_PER_TTL:
            raise ValueError(
                f"lease margin must be 0 s to 2/3 of the {ttl_s:g} s lease, not {margin}"
            )
        if not 1 <= replicas <= MAX_REPLICAS:
            raise ValueError(f"lease replicas must be 1 to {MAX_REPLICAS}, not {replicas}")
        if not holder_id.strip():
            raise ValueError("lease holder id must not be empty")
        if not _BUCKET_NAME.fullmatch(bucket):
            raise ValueError(f"lease bucket name must be letters, digits, - and _, not {bucket!r}")
        self._js = js
        self.holder_id = holder_id
        self.ttl_s = float(ttl_s)
        self.margin_s = float(margin)
        self.replicas = replicas
        self.bucket = bucket
        self._kv: KeyValue | None = None
        #: The current (or last) term's number; None before the first.
        self.term: int | None = None
        #: The revision of this holder's last write the server took.
        self.revision: int | None = None
        #: Monotonic time (``time.monotonic``, s) at which this term began.
        self.started_at: float | None = None
        #: Monotonic time past which this holder does not lead unless renewed.
        self.deadline: float | None = None
        #: Set once this holder lost the lease (not by ``release``); new each term.
        self.lost = asyncio.Event()
        #: Why the lease was lost, and when (monotonic s).
        self.lost_reason: str | None = None
        self.lost_at: float | None = None
        #: Who held the lease when this contender last looked, while it waited.
        self.seen: LeaseHolder | None = None
        self._value = b""
        self._nonce = ""
        self._released = True
        self._renewer: asyncio.Task[None] | None = None
        self._expiry: asyncio.TimerHandle | None = None
        self._writing = asyncio.Lock()  # one write of the key at a time

    @property
    def leading(self) -> bool:
        """Whether this holder leads now: it holds a term, has not lost or released
        it, and its deadline is ahead on the monotonic clock. Read before each act."""
        return (
            not self._released
            and not self.lost.is_set()
            and self.deadline is not None
            and time.monotonic() < self.deadline
        )

    async def acquire(self) -> int:
        """Return once this contender leads (at once when it already does): create
        the key, or wait until it is deleted or expires and try again, riding out
        NATS outages.

        Returns:
            The term's number.

        Raises:
            LeaseConfigError, xce_kit.streams.StreamRefused: see ``open_lease_bucket``.
            nats.errors.ConnectionClosedError: the client is closed for good.
        """
        if self.leading:
            assert self.term is not None
            return self.term
        await self._stop_renewing()
        self._nonce = secrets.token_hex(8)
        self._value = self._encode(None)
        kv = await self._bucket()
        poll = self.ttl_s / POLLS_PER_TTL
        try_at = expires_at = heard_at = time.monotonic()  # see below
        watcher: KeyValue.KeyWatcher | None = None
        try:
            while True:
                watcher = watcher or await self._watch(kv)
                wait = try_at - time.monotonic()
                if wait > 0:
                    heard, entry = await self._next_entry(watcher, wait)
                    heard_at = time.monotonic() if heard else heard_at
                    if entry is not None:
                        try_at = expires_at = self._expires(entry)
                    if heard or time.monotonic() < try_at:
                        continue
                sent = time.monotonic()
                if await self._try_create(kv):
                    return self._begin(sent)
                now = time.monotonic()
                # Still held: wait for the key seen to expire; past that, poll, often
                # at first (the server's age timer fires some ms late), then every
                # ``poll`` (nothing newer was seen: a dead watch, a clock off).
                if expires_at > now:
                    try_at = expires_at
                else:
                    try_at = now + (poll / 10 if now - expires_at < poll else poll)
                if watcher is not None and now - heard_at > self.ttl_s:
                    # A holder writes every ttl/3: a watch that heard nothing for a
                    # lease time died with its consumer (a NATS restart). Watch anew.
                    await self._unwatch(watcher)
                    watcher, heard_at = None, now
        finally:
            if watcher is not None:
                await self._unwatch(watcher)

    async def release(self) -> None:
        """Stop leading and delete the key, so a waiting contender takes over at once
        (on a failure to delete, logged, it takes over once the key expires). Does
        nothing unless this contender holds a term."""
        if self._released:
            return
        async with self._writing:  # a renewal in flight is stored or refused first
            self._released = True
            await self._stop_renewing()
            if self.lost.is_set() or self._kv is None or self.revision is None:
                return
            try:
                await asyncio.wait_for(
                    self._kv.delete(LEASE_KEY, last=self.revision), self.ttl_s - self.margin_s
                )
            except (NatsError, TimeoutError) as exc:
                log.warning("lease term %s not deleted (%s): it expires in time", self.term, exc)
            else:
                log.info("lease term %s released by %s", self.term, self.holder_id)

    # --- waiting ----------------------------------------------------------------------

    async def _bucket(self) -> KeyValue:
        if self._kv is None:
            self._kv = await open_lease_bucket(
                self._js, self.ttl_s, replicas=self.replicas, bucket=self.bucket
            )
        return self._kv

    @staticmethod
    async def _watch(kv: KeyValue) -> KeyValue.KeyWatcher | None:
        """A watch of the key (None while NATS does not answer: the caller polls)."""
        try:
            return await kv.watch(LEASE_KEY)
        except ConnectionClosedError:
            raise
        except (NatsError, TimeoutError) as exc:
            log.debug("lease watch not made (%s); polling", exc)
            return None

    @staticmethod
    async def _unwatch(watcher: KeyValue.KeyWatcher) -> None:
        with contextlib.suppress(NatsError, TimeoutError):
            await cast(Callable[[], Awaitable[None]], watcher.stop)()

    @staticmethod
    async def _next_entry(
        watcher: KeyValue.KeyWatcher | None, timeout: float
    ) -> tuple[bool, KeyValue.Entry | None]:
        """Whether the watch said anything within ``timeout`` s, and the entry it gave
        (None: nothing, or its end-of-history marker)."""
        if watcher is None:
            await asyncio.sleep(timeout)
            return False, None
        try:
            return True, await cast(_Updates, watcher.updates)(timeout=timeout)
        except TimeoutError:
            return False, None

    def _expires(self, entry: KeyValue.Entry) -> float:
        """When to try again after seeing ``entry`` (monotonic s): at once after a
        delete, else when the entry reaches the bucket's max age by its server
        timestamp (never later than ``ttl_s`` from now: it was stored before now)."""
        now = time.monotonic()
        if entry.operation in (KV_DEL, KV_PURGE):
            self.seen = None
            return now
        self.seen = self._decode(entry.value or b"")
        age = 0.0
        if isinstance(entry.created, datetime.datetime):
            age = (datetime.datetime.now(datetime.UTC) - entry.created).total_seconds()
        return now + min(self.ttl_s, max(0.0, self.ttl_s - age))

    async def _try_create(self, kv: KeyValue) -> bool:
        """Create the key; False while it exists or NATS does not answer."""
        try:
            rev = await asyncio.wait_for(kv.create(LEASE_KEY, self._value), self.ttl_s)
        except KeyWrongLastSequenceError:
            return False
        except ConnectionClosedError:
            raise
        except (NatsError, TimeoutError) as exc:
            log.debug("lease create failed (%s); trying again", exc)
            return False
        self.term = self.revision = rev
        return True

    def _begin(self, sent: float) -> int:
        """Start the term just created (its create was sent at ``sent``)."""
        assert self.term is not None
        self.lost = asyncio.Event()
        self.lost_reason = self.lost_at = self.seen = None
        self._released = False
        self.started_at = time.monotonic()
        self._value = self._encode(self.term)
        self._renewed(sent)
        self._renewer = asyncio.create_task(self._renew(sent), name=f"lease-{self.term}")
        log.info("lease term %d begins: %s leads", self.term, self.holder_id)
        return self.term

    # --- leading ----------------------------------------------------------------------

    def _renewed(self, sent: float) -> None:
        """A write sent at ``sent`` was stored: the holder leads until ``sent + ttl -
        margin``, when ``_expire`` deposes it unless renewed again."""
        self.deadline = sent + self.ttl_s - self.margin_s
        if self._expiry is not None:
            self._expiry.cancel()
        delay = self.deadline - time.monotonic()
        self._expiry = asyncio.get_running_loop().call_later(delay, self._expire)

    def _expire(self) -> None:
        self._lose(f"no renewal stored for {self.ttl_s - self.margin_s:g} s")

    def _lose(self, why: str) -> None:
        if self.lost.is_set() or self._released:
            return
        self.lost_at = time.monotonic()
        self.lost_reason = why
        self.lost.set()
        if self._expiry is not None:
            self._expiry.cancel()
        if self._renewer is not None and self._renewer is not asyncio.current_task():
            self._renewer.cancel()
        log.warning("lease term %s lost by %s: %s", self.term, self.holder_id, why)

    async def _renew(self, sent: float) -> None:
        """Renew every ``ttl_s / 3`` after the last write stored (sent at ``sent``)
        while leading; a try that got no answer is tried again every ``ttl_s / 10``
        until the deadline (``_expire``)."""
        kv = self._kv
        assert kv is not None
        interval = self.ttl_s / RENEWALS_PER_TTL
        next_at = sent + interval
        first_try: float | None = None  # when the first try not acknowledged was sent
        while self.leading:
            await asyncio.sleep(max(0.0, next_at - time.monotonic()))
            async with self._writing:
                if not self.leading:
                    return
                sent = time.monotonic()
                first_try = sent if first_try is None else first_try
                outcome = await self._renew_once(kv, sent)
            if outcome == "lost":
                return
            if outcome == "retry":
                next_at = time.monotonic() + self.ttl_s / POLLS_PER_TTL
                continue
            # An adopted write was stored after one of the tries since the last one
            # acknowledged: date it from the first of them (stored no earlier).
            self._renewed(first_try if outcome == "adopted" else sent)
            first_try = None
            next_at = sent + interval

    async def _renew_once(self, kv: KeyValue, sent: float) -> str:
        """One renewal: ``"renewed"``; ``"adopted"`` (refused, but an earlier try not
        acknowledged was stored: the key holds this term's value); ``"lost"``
        (``_lose`` was called); ``"retry"`` (no answer: try again)."""
        assert self.revision is not None and self.deadline is not None
        try:
            self.revision = await asyncio.wait_for(
                kv.update(LEASE_KEY, self._value, last=self.revision), self.deadline - sent
            )
            return "renewed"
        except KeyWrongLastSequenceError:
            pass
        except ConnectionClosedError:
            self._lose("the NATS connection is closed")
            return "lost"
        except (NatsError, TimeoutError) as exc:
            log.warning("lease term %s not renewed (%s); trying again", self.term, exc)
            return "retry"
        try:
            entry = await asyncio.wait_for(kv.get(LEASE_KEY), max(0.0, self.deadline - sent))
        except KeyNotFoundError:
            self._lose("the key expired or was deleted")
            return "lost"
        except (NatsError, TimeoutError) as exc:
            log.warning("lease term %s: key not read (%s); trying again", self.term, exc)
            return "retry"
        if entry.value == self._value:  # the nonce makes it this very term's
            self.revision = entry.revision
            return "adopted"
        holder = self._decode(entry.value or b"")
        self._lose(f"taken by {holder.holder} (term {holder.term})")
        return "lost"

    async def _stop_renewing(self) -> None:
        if self._expiry is not None:
            self._expiry.cancel()
        if self._renewer is not None and self._renewer is not asyncio.current_task():
            self._renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewer
        self._renewer = None

    # --- the key's value ----------------------------------------------------------------

    def _encode(self, term: int | None) -> bytes:
        doc: dict[str, object] = {"holder": self.holder_id, "nonce": self._nonce}
        if term is not None:
            doc["term"] = term
        return orjson.dumps(doc)

    @staticmethod
    def _decode(value: bytes) -> LeaseHolder:
        """Who a value names (a value not written by a ``Lease``: its text)."""
        try:
            doc = orjson.loads(value)
            return LeaseHolder(str(doc["holder"]), doc.get("term"))
        except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
            return LeaseHolder(value.decode(errors="replace"), None)
