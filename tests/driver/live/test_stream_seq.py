"""``stream_seq`` reads a delivery's stream sequence as nats-py's metadata does,
from both forms of the JetStream reply subject."""

from __future__ import annotations

import pytest
from nats.aio.msg import Msg
from nats.errors import NotJSMessageError
from xce_kit.pull import stream_seq


@pytest.mark.parametrize(
    "reply",
    [
        "$JS.ACK.XCE_EVENTS.xce-core.1.4711.12.1700000000000000000.3",
        "$JS.ACK._.ACCHASH.XCE_EVENTS.xce-core.2.4711.12.1700000000000000000.3.token",
    ],
)
def test_stream_seq_agrees_with_the_metadata(reply: str) -> None:
    msg = Msg(_client=None, subject="xce.events.BEGIN_ROUND", reply=reply)
    assert stream_seq(msg) == msg.metadata.sequence.stream == 4711


def test_a_message_that_is_no_delivery_is_refused() -> None:
    msg = Msg(_client=None, subject="xce.events.BEGIN_ROUND", reply="_INBOX.abc")
    with pytest.raises(NotJSMessageError):
        stream_seq(msg)
