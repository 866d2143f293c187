"""The cluster model both emulators share: one cluster, two clocks.

``agenda`` (what is due when, SimPy's event queue), ``jobs`` (a job's record, run
plan and run state), ``controller`` (what a controller submits, refuses and turns
away), ``model`` (hosts and jobs on an agenda: dispatch, finish, suspend, resume,
run limits), ``realtime`` (the wall clock moving an agenda, for the live emulator).
The simulation (``xce_driver.emulator``) jumps its agenda from one entry to the
next; the live emulator (``xce_driver.live.emulate``) waits for the wall clock: that
is the only difference in how they run the cluster. Nothing here needs a bus.
"""
