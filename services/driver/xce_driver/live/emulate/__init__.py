"""The cluster emulator over NATS: a controller and its hosts, in scaled real time.

``xce-sched emulate`` plays, against the live services (``xce-bridge`` and
``xce-core-service``), what ``xce_driver.emulator.ClusterEmulator`` plays against an
in-process core: it publishes the configuration and the hosts, submits each job of
the workload at its submit time (workload seconds divided by ``speed``), and answers
the decisions forwarded on ``xce.ctl.decisions.<OP>`` as the hosts would:

* ``DISPATCH``: the job runs for its run time (divided by ``speed``), then is
  reported ``DONE``, or ``EXIT`` when its queue's run limit comes first (time
  suspended does not count);
* ``PREEMPT``: each victim still running is suspended and reported ``SUSP``; it
  keeps the run time it has left;
* ``RESUME``: the job runs its remaining time from now (nothing is reported);
* ``PEND`` as larger than the cluster: the job is rejected (``EXIT``); a job of a
  closed queue is refused at submission and never sent.

The hosts and jobs are the cluster model's (``xce_driver.cluster.model``), the one the
virtual-time emulator runs: submissions and finishes are entries of its agenda.
Only time moves otherwise: the wall clock, times ``speed``, steps the agenda
(``xce_driver.cluster.realtime.WallClock``), and a decision happens at the wall
clock's time when it arrives. Times in the records are workload seconds: wall time
since the start times ``speed``, from the first submission; a job's start is the
time of the round that dispatched it (its decision's ``ts``, the bridge's wall
clock, which must be this machine's), not before its submission nor after the
decision arrived; it ends its run time later (time suspended aside). Decisions older
than the emulator's start (of an earlier run) are ignored. Run it against a fresh
core: jobids the core already knows are refused.

**Refusals** of this run's messages, read from ``XCE_DEADLETTER``, are told as
``refusals`` says: a refused submission ends the run with ``SubmissionRefused``.

Delivery (``xce_schemas.controller``): each controller message is published to
``XCE_CONTROLLER`` with the id ``xce-sched-emulate:<run>:<n>`` and sent again, same
id, until the stream acknowledges it, one at a time so they stay in order; the
decisions are read from ``XCE_CTL_DECISIONS`` in stream order through a durable
consumer of this run (``xce-sched-emulate-<run>``, from the stream's end at the
start, deleted at the end), and a decision id already applied is ignored. A NATS
server restarted meanwhile loses nothing either way.

The package: ``service`` (``LiveEmulator``: the run, its sending, and the decisions
applied to the cluster model), ``refusals`` (which dead letters refuse this run's
messages: ``SubmissionRefused``). The in-order reader of a run's own durable
consumer is the kit's (``xce_kit.run_reader``).
"""

from xce_driver.live.emulate.refusals import (
    EARLIER_RUN_HINT,
    RESET_STEPS,
    Sent,
    SubmissionRefused,
)
from xce_driver.live.emulate.service import CONTROLLER, MAX_SPEED, LiveEmulator

#: The name the message record had before the package split (tests set it up).
_Sent = Sent

__all__ = [
    "CONTROLLER",
    "EARLIER_RUN_HINT",
    "MAX_SPEED",
    "RESET_STEPS",
    "LiveEmulator",
    "Sent",
    "SubmissionRefused",
]
