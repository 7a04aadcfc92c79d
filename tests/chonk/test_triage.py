"""EC-MGR-003 (contradictory proposals go to Chonksworth's triage, neither executes) and
RC-MGR-01 (three actions outside the allowlist in a week regress a Chonk to PROPOSE)."""

from datetime import UTC, date, datetime, timedelta

from services.chonk.domain.triage import Change, conflicts, regressed


def test_ec_mgr_003_two_chonks_moving_ben_over_the_same_days_make_one_decision_and_no_change():
    move = Change(
        id="prop_ops_1",
        chonk="ops",
        person="sim-lanternfish/ben",
        what="move Ben to Platform",
        starts=date(2026, 9, 14),
        ends=date(2026, 10, 9),
    )
    review = Change(
        id="prop_por_1",
        chonk="porpoise",
        person="sim-lanternfish/ben",
        what="Ben on the roadmap review",
        starts=date(2026, 9, 21),
        ends=date(2026, 9, 25),
    )
    later = Change(
        id="prop_por_2",
        chonk="porpoise",
        person="sim-lanternfish/ben",
        what="Ben on the Q4 retro",
        starts=date(2026, 11, 2),
        ends=date(2026, 11, 3),
    )
    decisions, held = conflicts([move, review, later])
    [decision] = decisions
    assert decision.changes == ("prop_ops_1", "prop_por_1")
    assert "move Ben to Platform" in decision.question
    assert held == {"prop_ops_1", "prop_por_1"}  # the retro, clashing with nothing, goes


def test_rc_mgr_01_three_outside_the_allowlist_in_a_week_regress_the_chonk():
    now = datetime(2026, 9, 8, tzinfo=UTC)
    two = [("build", now - timedelta(days=1)), ("build", now - timedelta(days=2))]
    assert regressed(two, now) == frozenset()
    assert regressed([*two, ("build", now)], now) == {"build"}
    assert regressed([*two, ("build", now - timedelta(days=8))], now) == frozenset()
