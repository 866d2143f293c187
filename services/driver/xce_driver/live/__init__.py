"""The live driver: the scheduling core as a service on NATS JetStream and Redis.

``core_service`` (a package) consumes cluster events from the ``XCE_EVENTS`` stream,
feeds them to a ``SchedCore`` and publishes its decisions on ``XCE_DECISIONS``,
checkpointing the core into Redis; ``bridge`` (a package) turns a controller's
messages into those events and its decisions back into the controller's;
``controller_bus`` declares the controller's streams, ``record_stream`` the core's
recording lines, ``emulate`` plays a controller; ``publish`` puts events on the bus.
The plumbing they share (reading in order, chained publishing, streams, options) is
the kit's (``xce_kit``). The subjects, ids and documents are the contract of
``xce_schemas.bus`` and ``xce_schemas.controller``.
"""
