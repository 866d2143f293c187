"""Preemption (Req 6): the victim search, the built-in policy, and resuming victims."""
