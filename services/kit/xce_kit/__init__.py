"""Service plumbing written once: what every live service (core service, bridge,
recorder, admin) and the live emulator share.

``options`` (command-line value types, the one-line parser, ``run_service``),
``connection`` (NATS connect), ``streams`` (JetStream stream creation), ``metrics``
(serving a Prometheus registry), ``pull`` (a durable pull consumer without a task
per message), ``tasks`` (cancelling for sure). The kit knows the bus contract
(``xce_schemas``) and its client libraries, never a service: it imports no
``xce_core``, ``xce_driver``, ``xce_recorder`` or ``xce_admin``.
"""
