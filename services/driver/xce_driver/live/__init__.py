"""The live driver: the scheduling core as a service on NATS JetStream and Redis.

``core_service`` consumes cluster events from the ``XCE_EVENTS`` stream, feeds them to
a ``SchedCore`` and publishes its decisions on ``XCE_DECISIONS``, checkpointing the
core into Redis; ``streams`` declares the streams; ``publish`` puts events on the bus.
The subjects, ids and documents are the contract of ``xce_schemas.bus``.
"""
