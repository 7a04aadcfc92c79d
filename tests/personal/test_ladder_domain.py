"""The ladder's rules as pure functions: resolution, the ceiling, changes, the decision."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from libs.contracts.ladder import SEND_MEANS, ChangeLevel, LadderSettings
from libs.contracts.problem import Refused
from services.ladder.domain.decide import decide
from services.ladder.domain.levels import RANK, change, effective, resolved

LEVELS = st.sampled_from(["draft", "confirm", "send"])
ROOM, OTHER_ROOM = "r-00000000000000a1", "r-00000000000000a2"
settings_ = st.builds(
    LadderSettings,
    default=LEVELS,
    transports=st.dictionaries(st.sampled_from(["sms", "email", "whatsapp"]), LEVELS),
    rooms=st.dictionaries(st.sampled_from([ROOM, OTHER_ROOM]), LEVELS),
)


@given(settings_, st.none() | LEVELS, st.none() | st.just(ROOM), st.none() | st.just("sms"))
def test_the_most_specific_level_set_applies_then_the_ceiling_only_lowers(
    settings, ceiling, room, transport
):
    level = effective(settings, ceiling, room, transport)
    if room in settings.rooms:
        expected = settings.rooms[room]
    elif transport in settings.transports:
        expected = settings.transports[transport]
    else:
        expected = settings.default
    assert resolved(settings, room, transport) == expected
    assert RANK[level] <= RANK[expected]
    assert ceiling is None or RANK[level] <= RANK[ceiling]
    assert level == (expected if ceiling is None or RANK[expected] <= RANK[ceiling] else ceiling)


def test_nothing_set_is_draft_everywhere():
    fresh = LadderSettings()
    for room in (None, ROOM):
        for transport in (None, "sms", "email"):
            assert effective(fresh, None, room, transport) == "draft"


@given(settings_, LEVELS)
def test_an_override_for_one_room_changes_no_other(settings, level):
    after = change(
        settings, ChangeLevel(level=level, scope="room", target=ROOM, acknowledge=SEND_MEANS)
    )
    assert resolved(after, OTHER_ROOM, "sms") == resolved(settings, OTHER_ROOM, "sms")
    assert resolved(after, ROOM, "sms") == level


def test_unsetting_an_override_inherits_again():
    settings = LadderSettings(default="confirm", rooms={ROOM: "draft"})
    after = change(settings, ChangeLevel(level=None, scope="room", target=ROOM))
    assert (after.rooms, resolved(after, ROOM, None)) == ({}, "confirm")


@pytest.mark.parametrize(
    "settings, request_",
    [
        (LadderSettings(), ChangeLevel(level="send")),
        (LadderSettings(), ChangeLevel(level="send", scope="transport", target="sms")),
        (
            LadderSettings(default="send", rooms={ROOM: "draft"}),
            ChangeLevel(level=None, scope="room", target=ROOM),
        ),  # uncovers send
    ],
    ids=["default", "transport", "unset-uncovers-send"],
)
def test_reaching_send_needs_its_meaning_acknowledged(settings, request_):
    with pytest.raises(Refused) as refused:
        change(settings, request_)
    assert refused.value.problem.rule == "send-not-acknowledged"
    acknowledged = ChangeLevel(
        level=request_.level, scope=request_.scope, target=request_.target, acknowledge=SEND_MEANS
    )
    assert change(settings, acknowledged) is not None


def test_lowering_and_staying_at_send_need_no_acknowledgement():
    at_send = LadderSettings(default="send")
    assert change(at_send, ChangeLevel(level="draft")).default == "draft"
    room_send = change(at_send, ChangeLevel(level="send", scope="room", target=ROOM))
    assert room_send.rooms == {ROOM: "send"}  # already send there: not a raise


@pytest.mark.parametrize(
    "bad",
    [
        ChangeLevel(level=None),
        ChangeLevel(level="draft", target=ROOM),
        ChangeLevel(level="draft", scope="room"),
        ChangeLevel(level="draft", scope="transport", target="fax"),
    ],
    ids=["unset-default", "default-with-target", "room-without-target", "unknown-transport"],
)
def test_a_change_that_means_nothing_is_refused(bad):
    with pytest.raises(Refused):
        change(LadderSettings(), bad)


@pytest.mark.parametrize(
    "level, first_contact, synchronous, action, window",
    [
        ("draft", False, False, "draft", None),
        ("confirm", False, False, "confirm", None),
        ("send", False, False, "send", "15m"),
        ("draft", True, False, "draft", None),
        ("confirm", True, False, "confirm", None),
        ("send", True, False, "confirm", None),
        ("draft", False, True, "silent", None),
        ("confirm", False, True, "silent", None),
        ("send", False, True, "send", "instant"),
        ("send", True, True, "silent", None),
    ],
)
def test_the_decision_for_one_reply(level, first_contact, synchronous, action, window):
    decided = decide(level, "15m", first_contact=first_contact, synchronous=synchronous)
    assert (decided.level, decided.action, decided.window) == (level, action, window)


@given(settings_, st.none() | LEVELS, st.none() | st.just(ROOM), st.none() | st.just("sms"))
def test_what_decided_the_level_is_the_most_specific_setting_or_the_ceiling(
    settings, ceiling, room, transport
):
    from services.ladder.domain.levels import decided_by

    level, source = decided_by(settings, ceiling, room, transport)
    assert level == effective(settings, ceiling, room, transport)
    if source == "ceiling":
        assert RANK[ceiling] < RANK[resolved(settings, room, transport)]
    elif source == "room":
        assert room in settings.rooms
    elif source == "transport":
        assert room not in settings.rooms and transport in settings.transports
