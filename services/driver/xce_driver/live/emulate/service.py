"""``LiveEmulator``: the live emulator's run (connect, send in order, read decisions
and dead letters) and the cluster model's controller it plays; what it does and
the bus it uses are told in the package's docstring (``xce_driver.live.emulate``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from asyncio import FIRST_COMPLETED
from collections.abc import Sequence

import orjson
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from pydantic import ValidationError
from xce_kit.connection import connect_nats
from xce_kit.publisher import publish_until_acked
from xce_kit.reader import Delivered, InOrderReader, ack_last, deliveries, stream_epoch
from xce_kit.run_reader import reader_from_now
from xce_kit.streams import DEFAULT_LIMITS, deadletter_stream_config, ensure_stream
from xce_kit.tasks import cancel_and_wait
from xce_schemas import (
    Dispatch,
    HostSpec,
    JobState,
    Pend,
    QueueSpec,
    SchedulerConfig,
    parse_decision,
)
from xce_schemas.bus import DEADLETTER_STREAM, MSG_ID_HEADER
from xce_schemas.controller import (
    CTL_DECISIONS_STREAM,
    CTL_STREAM,
    DECISION_ID_HEADER,
    JobsSubmit,
    ctl_msg_id,
    ctl_subject,
)
from xce_schemas.events import (
    ConfigPushPayload,
    JobStateChangePayload,
    WorkersPushPayload,
)

from xce_driver.cluster.controller import job_request
from xce_driver.cluster.jobs import NS
from xce_driver.cluster.model import ClusterModel
from xce_driver.cluster.realtime import WallClock
from xce_driver.cluster.timeline import Instant
from xce_driver.live.controller_bus import ensure_ctl_streams
from xce_driver.live.emulate.refusals import Sent, tell_dead_letter
from xce_driver.workloads.mapping import SimJob

log = logging.getLogger("xce_driver.live.emulate")

#: The controller name in the emulator's message ids and consumer name.
CONTROLLER = "xce-sched-emulate"
#: How long a run that timed out still tries to send what it queued, s.
SEND_GRACE_S = 10.0
#: Wall seconds without a decision after which the emulator says it hears none.
SILENCE_S = 10.0
#: Highest ``speed``, workload seconds per wall second (one workload second per wall
#: ns): beyond it workload times overflow a float and nothing is gained.
MAX_SPEED = 1e9


class LiveEmulator:
    """A workload's controller and hosts over NATS, in real time scaled by ``speed``.

    Args:
        jobs: the workload, in submit order (``SimJob``: times in workload seconds).
        hosts: the cluster's hosts, published once at the start.
        config: the scheduler configuration, published first.
        nats_url: NATS server URL(s).
        speed: workload seconds per wall second, above 0 and at most ``MAX_SPEED``:
            100 runs a 100 s job in 1 s.

    Attributes:
        model: the cluster model it plays (its agenda in workload ns from the
            trace's origin, moved by the wall clock).
        records: every job's ``JobRecord``; stats: what crossed the bus (the
            model's).

    Raises:
        ValueError: a speed that is not above 0, or above ``MAX_SPEED`` (or NaN).
    """

    def __init__(
        self,
        jobs: Sequence[SimJob],
        hosts: Sequence[HostSpec],
        config: SchedulerConfig,
        *,
        nats_url: str,
        speed: float,
    ) -> None:
        if not (0 < speed <= MAX_SPEED):
            raise ValueError(f"speed must be above 0 and at most {MAX_SPEED:g}, not {speed}")
        self.model = ClusterModel(jobs, config.queues, self)
        self.records = self.model.records
        self.stats = self.model.stats
        self._hosts = tuple(hosts)
        self._config = config
        self._nats_url = nats_url
        self._speed = speed
        self._first_s = min((job.submit_s for job in jobs), default=0)
        # The workload's clock starts at its first submission (nothing is due yet).
        self.model.agenda.run(until=self._first_s * NS)
        self._clock = WallClock(self.model.agenda, speed)
        #: (kind, payload, job ids submitted) of each message to send, in order.
        self._outbox: asyncio.Queue[tuple[str, bytes, tuple[int, ...]]] = asyncio.Queue()
        self._all_done = asyncio.Event()
        self._wall0 = 0
        self._last_decision = 0.0  # time.monotonic() of the last decision applied
        self._nc: NatsClient | None = None
        self._run_id = f"{time.time_ns():x}"
        #: Ids of the decisions applied (``Xce-Decision-Id``).
        self._applied: set[str] = set()
        #: ``XCE_CONTROLLER`` sequence → the message of this run stored there (jobs,
        #: configuration and hosts: the ones whose refusal is told).
        self._sent: dict[int, Sent] = {}
        #: Creation time of ``XCE_CONTROLLER`` (``stream_epoch``), read at the start.
        self._ctl_epoch = ""

    # --- time ------------------------------------------------------------------------

    def _at(self, wall_ns: int) -> int:
        """Workload time of the wall clock ``wall_ns``, ns from the workload's origin."""
        return self._first_s * NS + int((wall_ns - self._wall0) * self._speed)

    # --- the run -----------------------------------------------------------------------

    async def run(self, timeout_s: float | None = None) -> bool:
        """Bring the cluster up, submit every job and answer decisions until every job
        finished or was rejected.

        Args:
            timeout_s: give up after this many wall seconds (None: never).

        Returns:
            True when every job is done; False when ``timeout_s`` passed first.

        Raises:
            SubmissionRefused: the core (or the bridge) refused a message that
                submitted jobs of this run (raised as soon as its dead letter comes).
            nats.errors.Error, OSError: NATS cannot be reached at start.
        """
        nc = self._nc = await connect_nats(self._nats_url, CONTROLLER, log)
        js = nc.jetstream()
        durable = f"{CONTROLLER}-{self._run_id}"
        letters_durable = f"{durable}-deadletters"
        consumers = ((CTL_DECISIONS_STREAM, durable), (DEADLETTER_STREAM, letters_durable))
        tasks: list[asyncio.Task[None]] = []
        try:
            # Bounded as the services' defaults make them, should the emulator come first.
            await ensure_ctl_streams(js, DEFAULT_LIMITS)
            await ensure_stream(js, deadletter_stream_config(DEFAULT_LIMITS))
            self._ctl_epoch = stream_epoch(await js.stream_info(CTL_STREAM))
            reader = await self._reader(js, CTL_DECISIONS_STREAM, durable)
            letters = await self._reader(js, DEADLETTER_STREAM, letters_durable)
            self._wall0 = time.time_ns()
            self._clock.restart()
            self._last_decision = time.monotonic()
            receiver = asyncio.create_task(self._decision_loop(reader))
            refusals = asyncio.create_task(self._dead_letter_loop(js, letters))
            sender = asyncio.create_task(self._send_loop(js))
            self._send("config", ConfigPushPayload(config=self._config).model_dump_json())
            self._send("hosts", WorkersPushPayload(hosts=self._hosts).model_dump_json())
            self.model.schedule_arrivals()
            self._clock.arm()
            watchdog = asyncio.create_task(self._watch_silence())
            tasks += (receiver, refusals, sender, watchdog)
            self._check_done()
            # Ends early when a reader or the sender fails (e.g. the NATS connection
            # closed for good) or jobs are refused: that error is raised below.
            all_done = asyncio.create_task(self._all_done.wait())
            await asyncio.wait(
                {all_done, receiver, refusals, sender},
                timeout=timeout_s,
                return_when=FIRST_COMPLETED,
            )
            finished = self._all_done.is_set()
            await cancel_and_wait(all_done)
            await cancel_and_wait(receiver, refusals, watchdog)
            self._clock.stop()  # no more submissions nor finishes
            # Everything reported is sent (bounded when the run gave up: NATS may be gone).
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._outbox.join(), None if finished else SEND_GRACE_S)
            await cancel_and_wait(sender)
            # A task that failed before it was cancelled (SubmissionRefused included)
            # raises its error here.
            await asyncio.gather(*(task for task in tasks if not task.cancelled()))
            return finished
        finally:
            # Interrupted (Ctrl-C cancels this run): no task may read on.
            self._clock.stop()
            await cancel_and_wait(*tasks)
            for stream_name, name in consumers:
                with contextlib.suppress(NatsError, TimeoutError):
                    await js.delete_consumer(stream_name, name)
            if not nc.is_closed:
                await nc.close()

    async def _reader(self, js: JetStreamContext, stream: str, durable: str) -> InOrderReader:
        """This run's durable consumer of ``stream`` (``XCE_CTL_DECISIONS``,
        ``XCE_DEADLETTER``), from the stream's end (what an earlier run left there is
        not ours); kept across a NATS restart. A consumer that exists already must
        not be behind what the stream's limits dropped (``RetentionError``)."""
        assert self._nc is not None
        return await reader_from_now(self._nc, js, stream, durable)

    async def _watch_silence(self) -> None:
        """Say so, every ``SILENCE_S`` seconds, while no decision arrives: without a
        running xce-bridge and xce-core-service on this NATS nothing ever will."""
        while True:
            await asyncio.sleep(SILENCE_S)
            quiet = time.monotonic() - self._last_decision
            if quiet >= SILENCE_S:
                log.warning(
                    "no decision for %.0f s: are xce-bridge and xce-core-service running on %s?",
                    quiet,
                    self._nats_url,
                )

    async def _decision_loop(self, reader: InOrderReader) -> None:
        """Apply decisions in stream order; acknowledge each batch once applied."""
        while True:
            fresh, stale = await reader.next()
            if fresh:
                self._last_decision = time.monotonic()
            for item in fresh:
                try:
                    self._on_decision(item)
                except Exception:  # a bug: say so, and answer the decisions after it
                    log.exception("decision %d on %s not applied", item.seq, item.subject)
            await ack_last(deliveries(fresh, stale))  # all applied

    def _send(self, kind: str, data: str | bytes, jobids: tuple[int, ...] = ()) -> None:
        """Queue a controller message of ``kind`` (sent in order by ``_send_loop``);
        ``jobids``: the jobs a ``jobs`` message submits."""
        payload = data.encode() if isinstance(data, str) else data
        self._outbox.put_nowait((kind, payload, jobids))
        self.stats.events += 1

    async def _send_loop(self, js: JetStreamContext) -> None:
        """Send queued messages one at a time, each until ``XCE_CONTROLLER`` has it;
        note where it stored the ones whose refusal matters."""
        count = 0
        while True:
            kind, payload, jobids = await self._outbox.get()
            count += 1
            try:
                ack = await publish_until_acked(
                    js,
                    ctl_subject(kind),
                    payload,
                    stream=CTL_STREAM,
                    msg_id=ctl_msg_id(CONTROLLER, self._run_id, count),
                )
                if kind != "job_state":
                    self._sent[ack.seq] = Sent(kind, jobids)
            finally:
                self._outbox.task_done()

    # --- refusals ----------------------------------------------------------------------

    async def _dead_letter_loop(self, js: JetStreamContext, reader: InOrderReader) -> None:
        """Read ``XCE_DEADLETTER`` in order for refusals of this run's messages.

        Raises:
            SubmissionRefused: a message that submitted jobs was refused.
        """
        while True:
            fresh, stale = await reader.next()
            for item in fresh:
                await self._on_dead_letter(js, item)
            await ack_last(deliveries(fresh, stale))

    async def _on_dead_letter(self, js: JetStreamContext, item: Delivered) -> None:
        """Tell a dead letter (``refusals.tell_dead_letter``).

        Raises:
            SubmissionRefused: it refuses a message of this run that submitted jobs.
        """
        await tell_dead_letter(js, item, self._ctl_epoch, self._sent)

    # --- decisions -----------------------------------------------------------------------

    def _on_decision(self, item: Delivered) -> None:
        """Apply one forwarded decision, unless its id was applied already."""
        decision_id = item.headers.get(DECISION_ID_HEADER) or item.headers.get(MSG_ID_HEADER)
        if decision_id is not None:
            if decision_id in self._applied:
                return  # forwarded again (a bridge restart): acted on already
            self._applied.add(decision_id)
        try:
            decision = parse_decision(orjson.loads(item.data))
        except (orjson.JSONDecodeError, ValidationError, TypeError) as exc:
            log.warning("%s: not a decision (%s)", item.subject, exc)
            return
        if decision.ts < self._wall0:
            return  # a decision of an earlier run
        self.stats.decided(decision.op)
        self.stats.rounds += decision.op == "NEW_SESSION"
        self._clock.advance()  # the decision happens now, after all that is due by now
        if isinstance(decision, Dispatch):
            self._dispatch(decision)
        elif not isinstance(decision, Pend) or self._ours(decision.jobid):
            # A PREEMPT or RESUME of a job not running here changes nothing.
            self.model.apply(decision)
        self._clock.arm()  # what the decision scheduled may be due first
        self._check_done()

    def _ours(self, jobid: int) -> bool:
        """Whether the job is one of this run's, not turned away (a decision may come
        for another run's job, or come again after the job was turned away)."""
        record = self.records.get(jobid)
        return record is not None and not record.rejected

    def _dispatch(self, decision: Dispatch) -> None:
        """Start a job of this run that waits here; its start is the round's time."""
        jobid = decision.jobid
        record = self.records.get(jobid)
        if record is None or record.start_s is not None or record.rejected:
            log.warning("DISPATCH of job %d, which is not waiting here: ignored", jobid)
            return
        submitted_ns = self.model.jobs[jobid].submit_s * NS
        start_ns = min(self.model.agenda.now, max(submitted_ns, self._at(decision.ts)))
        self.model.dispatch(decision, start_ns)

    # --- the cluster model's controller ---------------------------------------------------

    def job_state(self, now: int, jobid: int, state: JobState) -> None:
        """Send the state change the model reports (``Controller``)."""
        self._send("job_state", JobStateChangePayload(jobid=jobid, state=state).model_dump_json())

    def submit_jobs(self, now: int, jobs: Sequence[tuple[SimJob, QueueSpec | None]]) -> None:
        """Send the jobs the model submits now, in one message (``Controller``)."""
        requests = tuple(job_request(job, queue) for job, queue in jobs)
        jobids = tuple(request.jobid for request in requests)
        self._send("jobs", JobsSubmit(jobs=requests).model_dump_json(), jobids)

    def settle(self, instant: Instant) -> None:
        """Act on one instant (``Controller``): its finishes, then its submission."""
        for jobid in instant.finished:
            self.model.finish(jobid)
        if instant.submitted:
            self.model.submit(instant.submitted)
        self._check_done()

    def _check_done(self) -> None:
        """Tell ``run`` when every job finished or was rejected."""
        if self.stats.done >= len(self.records):
            self._all_done.set()
