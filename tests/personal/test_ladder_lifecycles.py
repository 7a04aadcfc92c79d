"""A window's life and a confirmation's answer, as pure functions (hip-0524 §5, §6, §9)."""

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libs.contracts.ladder import PendingWindow
from libs.contracts.problem import Refused
from libs.contracts.rooms import Decline, Edit, Pick
from services.ladder.domain import confirmations, windows
from services.ladder.domain.confirmations import Confirmation

LEVELS = st.sampled_from(["draft", "confirm", "send"])
OPEN = PendingWindow(
    id="w-1",
    org="acme",
    room="r-00000000000000a1",
    reply_to=3,
    text="on my way",
    window="1m",
    due_at=datetime(2026, 11, 30, tzinfo=UTC),
    state="open",
    notice_seq=4,
)
SETTLED = {"sent", "canceled", "edited", "replaced", "stopped", "failed"}


def _event(draw_level: str, seq: int, act: str):
    """Every event a window meets, as a function of the window."""
    return {
        "end": lambda w: windows.ended(w, draw_level),
        "lowered": lambda w: windows.lowered(w, draw_level),
        "delivered": lambda w: windows.delivered(w, seq),
        "failed": windows.failed,
        "taken over": lambda w: windows.taken_over(w, act, w.id),
    }


events = st.lists(
    st.tuples(
        st.sampled_from(["end", "lowered", "delivered", "failed", "taken over"]),
        LEVELS,
        st.integers(1, 1000),
        st.sampled_from(["edited", "replaced", "stopped"]),
    ),
    max_size=12,
)


@given(events)
def test_a_window_only_moves_forward_and_a_settled_one_never_moves(history):
    window = OPEN
    for name, level, seq, act in history:
        try:
            after = _event(level, seq, act)[name](window)
        except Refused as exc:  # the person acts on a window that is no longer open
            assert name == "taken over" and window.state != "open"
            assert exc.problem.status == 409
            continue
        if after != window:
            assert after.state in windows.MOVES[window.state]
        if window.state in SETTLED:
            assert after == window
        assert (after.sent_seq is not None) == (after.state == "sent")
        window = after


@given(LEVELS)
def test_at_its_end_an_open_window_goes_only_at_send_and_is_canceled_below(level):
    after = windows.ended(OPEN, level)
    assert after.state == ("sending" if level == "send" else "canceled")
    # one whose delivery failed (or whose replica died) while sending goes again
    assert windows.ended(after, "draft") == after


@given(LEVELS)
def test_a_lowering_cancels_only_what_is_still_open_and_no_longer_at_send(level):
    assert windows.lowered(OPEN, level).state == ("open" if level == "send" else "canceled")
    sending = windows.ended(OPEN, "send")
    assert windows.lowered(sending, level) == sending


def test_only_an_open_window_can_be_taken_over_and_a_missing_one_is_not_found():
    with pytest.raises(Refused) as missing:
        windows.taken_over(None, "stopped", "w-9")
    assert missing.value.problem.status == 404
    sent = windows.delivered(windows.ended(OPEN, "send"), 7)
    with pytest.raises(Refused) as closed:
        windows.taken_over(sent, "edited", sent.id)
    assert closed.value.problem.status == 409
    assert windows.taken_over(OPEN, "stopped", OPEN.id).state == "stopped"


def test_failed_is_only_for_a_window_that_had_not_gone():
    assert windows.failed(OPEN).state == "failed"
    assert windows.failed(windows.ended(OPEN, "send")).state == "failed"
    sent = windows.delivered(windows.ended(OPEN, "send"), 7)
    assert windows.failed(sent) == sent


@pytest.mark.parametrize("act", ["edited", "replaced"])
def test_an_edit_or_replacement_notes_its_own_message_once(act):
    taken = windows.taken_over(OPEN, act, OPEN.id)
    noted = windows.own_sent(taken, 8)
    assert (noted.state, noted.sent_seq) == (act, 8)
    assert windows.own_sent(noted, 9) == noted
    stopped = windows.taken_over(OPEN, "stopped", OPEN.id)
    assert windows.own_sent(stopped, 8) == stopped
    assert windows.own_sent(OPEN, 8) == OPEN


CANDIDATES = ("yes, 7 works", "make it 8", "not this week")
ASKED = Confirmation(
    id="c-1",
    org="acme",
    room="r-00000000000000a1",
    person="acme/ada",
    question_seq=5,
    reply_to=3,
    candidates=CANDIDATES,
)
choices = st.one_of(
    st.builds(Pick, option=st.integers(0, len(CANDIDATES) - 1)),
    st.builds(Edit, text=st.text(min_size=1, max_size=40)),
    st.just(Decline()),
)


@given(st.lists(choices, min_size=1, max_size=5))
def test_the_first_answer_stands_and_says_what_leaves(answers):
    c = ASKED
    for choice in answers:
        c = confirmations.answer(c, choice)
    first = answers[0]
    assert c.answer == first
    reply = confirmations.reply(c)
    match first:
        case Pick(option=i):
            assert c.state == "picked"
            assert (reply.kind, reply.text, reply.edited) == ("message", CANDIDATES[i], False)
        case Edit(text=text):
            assert c.state == "edited"
            assert (reply.kind, reply.text, reply.edited) == ("own", text, True)
        case Decline():
            assert c.state == "declined"
            assert reply is None
    if reply is not None:  # into the question's room, after the message it answers
        assert (reply.org, reply.room, reply.person, reply.reply_to) == (
            "acme",
            ASKED.room,
            ASKED.person,
            ASKED.reply_to,
        )


def test_an_unanswered_confirmation_sends_nothing():
    assert confirmations.reply(ASKED) is None
