"""Service plumbing written once: what every live service (core service, bridge,
recorder, admin) and the live emulator share.

``options`` (command-line value types, the one-line parser, ``run_service``),
``reasons`` (why a connection or a bind failed, in a few words), ``connection``
(NATS connect), ``streams`` (JetStream stream creation and limits), ``retention``
(what a stream's limits dropped before it was read, caught), ``metrics`` (serving a
Prometheus registry), ``pull`` (a durable pull consumer without a task
per message), ``reader`` (a stream read strictly in order), ``run_reader`` (one
run's reader of what a stream receives from now on), ``publisher`` (ordered,
chained publishing, none twice), ``tasks`` (cancelling for sure), ``auth``
(credentials from files named in the environment), ``redis_client`` (Redis clients
with them), ``bus_policy`` and ``bus_config`` (who may do what on the bus, and
``xce-bus-config``, which writes it for nats-server and Redis). The kit knows the bus contract
(``xce_schemas``) and its client libraries, never a service: it imports no
``xce_core``, ``xce_driver``, ``xce_recorder`` or ``xce_admin``.
"""
