"""The words of a refused request: ``describe_unexpected`` and ``place_at`` answer for
any text and any position (they run on the parser's error path, which must never
raise: DESIGN invariant 5)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from xce_core.resreq.diagnose import describe_unexpected, place_at

from tests.core.resreq.test_parser import ANY_TEXT


@st.composite
def text_and_position(draw: st.DrawFn) -> tuple[str, int, str]:
    text = draw(st.one_of(ANY_TEXT, st.text(max_size=40)))
    position = draw(st.integers(0, len(text)))
    length = draw(st.integers(0, len(text) - position))
    return text, position, text[position : position + length]


@settings(max_examples=1000, deadline=None)
@given(text_and_position())
def test_any_position_of_any_text_is_described(case: tuple[str, int, str]) -> None:
    text, position, token = case
    place, problem = describe_unexpected(text, position, token)
    assert place and problem
    assert place_at(text, position) and place_at(text, position, inclusive=False)
