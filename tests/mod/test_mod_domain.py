"""hip-0528's rules as pure functions: §2 and §5's manifest checks, §3.4's load order, §9.2's
patches, §3.5's composition and §9.4's table, with no server."""

import contextlib
import copy
import json
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from libs.contracts.mod import (
    Bind,
    HeldDrafts,
    Hide,
    LayerDraft,
    Manifest,
    Move,
    Rename,
    Set,
    Show,
    TokenOp,
)
from libs.contracts.problem import Refused
from services.mod.domain import compose, drafts, patches, surface
from services.mod.domain.activation import activated, leaving
from services.mod.domain.drafts import commits
from services.mod.domain.manifests import check, mod_id, offered_slots
from services.mod.main import first_party
from tests.mod.conftest import weather

HANZO = first_party()
SLOTS = offered_slots(HANZO)
SHIPPED = Path(__file__).parents[2] / "services" / "mod" / "hanzo.json"


def refused(raw) -> tuple[str, ...]:
    with pytest.raises(Refused) as caught:
        check(raw, slots=SLOTS)
    assert caught.value.problem.status == 422
    return caught.value.problem.errors


def test_hip0528_02_the_example_manifest_checks():
    m = check(weather(), slots=SLOTS)
    assert mod_id(m) == "acme/weather"


def test_hip0528_02_a_manifest_is_refused_with_every_reason_at_once():
    raw = weather(permissions=["kms:sign", "todo:read"], backend={"kind": "goja"})
    raw["contributes"]["widgets"] = [{"id": "w"}]
    raw["contributes"]["views"].append({"id": "both", "title": "B", "app": "weather"})
    raw["build"] = dict(raw["build"], commit="main")
    errors = refused(raw)
    assert any(e.startswith("contributes.widgets: no such kind") for e in errors)
    assert any(e.startswith("build:") and "40" in e for e in errors)
    assert any("exactly one of app with route, or slot" in e for e in errors)
    assert any("'kms:sign' is never grantable: custody" in e for e in errors)
    assert any("a backend is wasm or sandbox" in e for e in errors)


def test_hip0528_02_the_kinds_are_closed_and_an_unknown_one_is_refused_by_name():
    raw = weather()
    raw["contributes"]["themes"] = []
    assert refused(raw) == (
        "contributes.themes: no such kind; the kinds are apps, views, commands, settings, "
        "tokens, agents, skills, mcp, tools",
    )


@pytest.mark.parametrize(
    ("view", "reason"),
    [
        ({"id": "v", "title": "V", "app": "weather"}, "exactly one of app with route"),
        ({"id": "v", "title": "V", "route": "/v", "slot": "hanzo/chat/chat:side"}, "exactly one"),
        ({"id": "v", "title": "V", "app": "hanzo/chat/chat", "route": "/v"}, "its own mod"),
        ({"id": "v", "title": "V", "slot": "hanzo/board/board:side"}, "no app offers the slot"),
        ({"id": "v", "title": "V", "app": "weather", "route": "v"}, "a route starts with /"),
    ],
)
def test_hip0528_02_a_view_is_a_page_of_its_own_app_or_a_panel_in_an_offered_slot(view, reason):
    raw = weather()
    raw["contributes"]["views"] = [view]
    assert any(reason in e for e in refused(raw))


def test_hip0528_02_a_view_in_its_own_app_s_slot_is_admitted():
    raw = weather()
    raw["contributes"]["views"] = [{"id": "v", "title": "V", "slot": "acme/weather/weather:side"}]
    (view,) = check(raw, slots=frozenset()).contributes.views
    assert view.slot == "acme/weather/weather:side"


@pytest.mark.parametrize("governs", ["authority", "money", "data-leaving", "agent-limits"])
def test_hip0528_02_a_setting_that_governs_what_costs_more_is_sensitive(governs):
    raw = weather()
    raw["contributes"]["settings"][0]["governs"] = [governs]
    assert any("so it is sensitive" in e for e in refused(raw))
    raw["contributes"]["settings"][0]["sensitive"] = True
    check(raw, slots=SLOTS)


@pytest.mark.parametrize(
    "permission",
    ["kms:sign", "wallet:pay", "iam:read", "admin:users", "tools:write", "marketplace:list",
     "settings:write", "mod:write", "net:localhost", "drive:delete", "net:api.example.com\n"],
)  # fmt: skip
def test_hip0528_05_4_a_mod_asks_only_for_what_the_grantable_list_holds(permission):
    assert any(repr(permission) in e for e in refused(weather(permissions=[permission])))


@pytest.mark.parametrize("backend", [{"kind": "goja"}, {"kind": "native"}, {"kind": "wasm"}])
def test_hip0528_05_5_a_backend_runs_only_in_wasm_or_a_sandbox(backend):
    assert any(e.startswith("backend") for e in refused(weather(backend=backend)))


@pytest.mark.parametrize("field", ["commit", "lockfile", "toolchain", "digest"])
def test_hip0528_05_6_a_build_record_names_a_commit_and_digests_never_a_branch(field):
    raw = weather()
    raw["build"] = dict(raw["build"], **{field: "main"})
    assert any(e.startswith("build:") for e in refused(raw))


def test_hip0528_02_uses_and_provides_are_well_formed():
    errors = refused(weather(uses=["hanzo/chat"], provides=[{"service": "a"}, {"service": "a"}]))
    assert any("<publisher>/<id>#<service>" in e for e in errors)
    assert any("provides: 'a' twice" in e for e in errors)
    (error,) = refused(weather(uses=["hanzo/chat#composer\n"]))
    assert "<publisher>/<id>#<service>" in error


def test_hip0528_04_the_fifteen_first_party_mods_are_hanzo_s_and_check_like_any_other():
    names = {"chat", "dev", "studio", "tabs", "home", "inbox", "contacts", "meet", "calendar",
             "drive", "board", "bots", "team", "catalog", "settings"}  # fmt: skip
    assert {m.id for m in HANZO} == names and {m.publisher for m in HANZO} == {"hanzo"}
    assert all(m.contributes.apps and m.contributes.commands for m in HANZO)
    settings = {s.id: s for m in HANZO for s in m.contributes.settings}
    for ladder in ("ladder-level", "ladder-window", "ladder-ceiling"):
        assert settings[ladder].sensitive and "agent-limits" in settings[ladder].governs
    assert {t.id for m in HANZO for t in m.contributes.tokens} >= {"accent"}
    order, missing = activated(HANZO)
    assert len(order) == 15 and missing == []


def test_hip0528_04_no_product_word_becomes_a_route_or_a_field_name():
    def keys(value) -> set[str]:
        if isinstance(value, dict):
            return set(value) | {k for v in value.values() for k in keys(v)}
        if isinstance(value, list):
            return {k for v in value for k in keys(v)}
        return set()

    shipped = json.loads(SHIPPED.read_text())
    assert not {k for k in keys(shipped) if k.lower() in ("app", "dev")} - {"app"}
    routes = [v.route for m in HANZO for v in m.contributes.views if v.route]
    assert all(r.lower() not in ("/app", "/dev") for r in routes)


def _mod(name: str, uses=(), provides=()) -> Manifest:
    raw = {"id": name, "publisher": "acme", "title": name, "version": "1"}
    raw |= {"uses": list(uses), "provides": [{"service": s} for s in provides]}
    return msgspec.convert(raw, Manifest)


def test_hip0528_03_4_a_mod_activates_after_what_it_uses_ties_broken_by_name():
    mods = [_mod("c", uses=["acme/a#x"]), _mod("b"), _mod("a", provides=["x"])]
    order, missing = activated(mods)
    assert [m.id for m in order] == ["a", "b", "c"] and missing == []
    mods = [_mod("a", uses=["acme/z#y"]), _mod("z", provides=["y"])]
    assert [m.id for m in activated(mods)[0]] == ["z", "a"]


def test_hip0528_03_4_a_mod_whose_need_is_never_met_is_left_out_naming_the_service():
    order, missing = activated([_mod("a", uses=["acme/gone#x"]), _mod("b", uses=["acme/a#y"])])
    assert order == []
    assert [(m.mod, m.service) for m in missing] == [("acme/a", "acme/gone#x"),
                                                      ("acme/b", "acme/a#y")]  # fmt: skip


def test_hip0528_03_4_when_a_provider_leaves_its_users_leave_first():
    mods = [_mod("base", provides=["x"]), _mod("mid", uses=["acme/base#x"], provides=["y"]),
            _mod("top", uses=["acme/mid#y"]), _mod("alone")]  # fmt: skip
    assert leaving(mods, "acme/base") == ["acme/top", "acme/mid", "acme/base"]


SURFACE = surface.index(surface.entries([(m, "hanzo") for m in activated(HANZO)[0]]))


def write(ops, layer="user", prior=(), org_hides=frozenset(), note=""):
    return patches.checked(layer, list(prior), ops, note, SURFACE, org_hides=org_hides)


@pytest.mark.parametrize(
    ("op", "reason"),
    [
        (Hide(kind="apps", id="hanzo/nope/nope"), "the surface lists no apps"),
        (Hide(kind="views", id="hanzo/chat/chat"), "the surface lists no views"),
        (Bind(kind="apps", id="hanzo/chat/chat", chord="ctrl+k"), "do not admit bind"),
        (Rename(kind="apps", id="hanzo/chat/chat", title="x" * 41), "1 to 40 characters"),
        (Rename(kind="apps", id="hanzo/chat/chat", title="Chat\u0007"), "plain text"),
        (Set(kind="settings", id="hanzo/settings/units", value="furlongs"), "must be one of"),
        (Set(kind="settings", id="hanzo/settings/notifications", value="yes"), "a boolean"),
        (TokenOp(kind="tokens", id="hanzo/settings/accent", value="#ff0000"), "is not one of"),
        (Move(kind="apps", id="hanzo/chat/chat", index=0, slot="hanzo/chat/chat:side"), "rail"),
        (Move(kind="views", id="hanzo/calendar/agenda", index=0, slot="x:y"), "no slot"),
        (Bind(kind="commands", id="hanzo/chat/new", chord="ctrl+kk"), "is not a chord"),
        (Set(kind="settings", id="hanzo/settings/spend-limit", value=5), "only in the org"),
    ],
)
def test_hip0528_09_2_a_write_is_checked_whole_and_the_refused_op_is_named_by_index(op, reason):
    fine = Hide(kind="apps", id="hanzo/board/board")
    with pytest.raises(Refused) as caught:
        write([fine, op])
    assert caught.value.problem.index == 1
    assert reason in caught.value.problem.detail


def test_hip0528_09_4_rule_6_a_person_cannot_show_what_their_org_hid():
    show = Show(kind="apps", id="hanzo/board/board")
    with pytest.raises(Refused) as caught:
        write([show], org_hides=frozenset({("apps", "hanzo/board/board")}))
    assert caught.value.problem.index == 0
    assert write([show], layer="org") == [show]


def test_hip0528_09_2_a_patch_names_its_contribution_by_kind_and_id():
    """hanzo's settings mod offers the command `theme` ("Switch theme") and the token
    `theme`: one id, two contributions. A patch of the command was refused as naming none
    (the surface was looked up by id, which found the token), and what it sets is the
    command's alone."""
    hide = Hide(kind="commands", id="hanzo/settings/theme")
    bind = Bind(kind="commands", id="hanzo/settings/theme", chord="ctrl+t")
    dark = TokenOp(kind="tokens", id="hanzo/settings/theme", value="dark")
    assert write([bind, dark]) == [bind, dark]
    entries = list(SURFACE.values())
    drawn = compose.composed(entries, [], [bind, dark])
    assert drawn["tokens"]["hanzo/settings/theme"] == "dark"
    assert {c["id"]: c["chord"] for c in drawn["commands"]}["hanzo/settings/theme"] == "ctrl+t"
    drawn = compose.composed(entries, [], write([hide, dark]))
    assert "hanzo/settings/theme" not in {c["id"] for c in drawn["commands"]}
    assert drawn["tokens"]["hanzo/settings/theme"] == "dark"  # the token is not hidden
    assert drawn["hidden"] == ["hanzo/settings/theme"]


def test_hip0528_09_2_rule_4_an_app_and_a_view_of_one_id_are_two_targets():
    """A mod's app and its view may share an id: renaming, moving or hiding one leaves the
    other as it was, and the layer keeps both ops."""
    raw = {"id": "twin", "publisher": "acme", "title": "Twin", "version": "1", "contributes": {
        "apps": [{"id": "twin", "title": "Twin"}],
        "views": [{"id": "twin", "title": "Twin view", "app": "twin", "route": "/"}],
    }}  # fmt: skip
    twin = check(raw)  # each kind's ids its own
    entries = surface.entries([(m, "hanzo") for m in activated([*HANZO, twin])[0]])
    app = Rename(kind="apps", id="acme/twin/twin", title="Mine")
    view = Rename(kind="views", id="acme/twin/twin", title="Its page")
    hide = Hide(kind="views", id="acme/twin/twin")
    layer = patches.merged([app], [view])
    assert layer == [app, view]
    drawn = compose.composed(entries, [], [*layer, hide])
    assert {a["id"]: a["title"] for a in drawn["apps"]}["acme/twin/twin"] == "Mine"
    assert "acme/twin/twin" not in {v["id"] for v in drawn["views"]}


def test_hip0528_09_2_rule_4_one_layer_binding_one_chord_to_two_commands_is_refused():
    prior = [Bind(kind="commands", id="hanzo/chat/new", chord="ctrl+k")]
    with pytest.raises(Refused) as caught:
        write([Bind(kind="commands", id="hanzo/dev/run", chord="ctrl+k")], prior=prior)
    assert caught.value.problem.index == 0
    rebound = write([Bind(kind="commands", id="hanzo/chat/new", chord="ctrl+j")], prior=prior)
    assert rebound == [Bind(kind="commands", id="hanzo/chat/new", chord="ctrl+j")]


APP_IDS = sorted(e.id for e in SURFACE.values() if e.kind == "apps")
ops_ = st.one_of(
    st.builds(Hide, kind=st.just("apps"), id=st.sampled_from(APP_IDS)),
    st.builds(Show, kind=st.just("apps"), id=st.sampled_from(APP_IDS)),
    st.builds(Move, kind=st.just("apps"), id=st.sampled_from(APP_IDS), index=st.integers(0, 20)),
    st.builds(
        Rename,
        kind=st.just("apps"),
        id=st.sampled_from(APP_IDS),
        title=st.sampled_from(["Mail", "Notes", "Files"]),
    ),
)


@given(st.lists(ops_, max_size=30), st.lists(ops_, max_size=30))
def test_hip0528_09_2_rule_4_a_layer_keeps_one_op_per_target_the_later_winning(first, then):
    layer = patches.merged(patches.merged([], first), then)
    targets = [patches.target(op) for op in layer]
    assert len(targets) == len(set(targets))
    for op in layer:
        assert op == [o for o in (*first, *then) if patches.target(o) == patches.target(op)][-1]


def test_hip0528_09_2_rule_5_the_higher_layer_wins_but_what_the_org_hides_stays_hidden():
    entries = list(SURFACE.values())
    org = [Hide(kind="apps", id="hanzo/board/board"), Rename(kind="apps", id="hanzo/chat/chat",
           title="Talk"), Bind(kind="commands", id="hanzo/chat/new", chord="ctrl+k")]  # fmt: skip
    user = [Show(kind="apps", id="hanzo/board/board"),
            Rename(kind="apps", id="hanzo/chat/chat", title="Mine"),
            Bind(kind="commands", id="hanzo/dev/run", chord="ctrl+k"),
            Move(kind="apps", id="hanzo/drive/drive", index=1),
            TokenOp(kind="tokens", id="hanzo/settings/accent", value="ember"),
            Hide(kind="apps", id="acme/gone/gone")]  # fmt: skip
    drawn = compose.composed(entries, org, user)
    assert "hanzo/board/board" in drawn["hidden"]
    apps = [a["id"] for a in drawn["apps"]]
    assert "hanzo/board/board" not in apps and apps[1] == "hanzo/drive/drive"
    assert next(a for a in drawn["apps"] if a["id"] == "hanzo/chat/chat")["title"] == "Mine"
    chords = {c["id"]: c["chord"] for c in drawn["commands"]}
    assert chords["hanzo/dev/run"] == "ctrl+k" and chords["hanzo/chat/new"] is None
    assert drawn["tokens"]["hanzo/settings/accent"] == "ember"
    assert drawn["settings"]["hanzo/settings/units"] == "metric"


def test_hip0528_09_2_rule_5_an_op_whose_id_left_the_surface_is_kept_and_does_nothing():
    entries = list(SURFACE.values())
    gone = Hide(kind="apps", id="acme/weather/weather")
    assert write([Hide(kind="apps", id="hanzo/board/board")], prior=[gone])[0] == gone
    assert compose.composed(entries, [], [gone]) == compose.composed(entries, [], [])


LEVELS, WINDOWS = ["draft", "confirm", "send"], ["instant", "1m", "5m", "15m", "1h"]


@given(
    st.sampled_from(["org", "user"]), st.sampled_from(LEVELS), st.sampled_from(WINDOWS),
    st.booleans(),
)  # fmt: skip
def test_hip0528_09_4_rule_2_the_table_and_rules_3_and_5(layer, level, window, sensitive):
    how, why = commits(layer, agent=True, level=level, window=window, sensitive=sensitive)
    if layer == "org" or sensitive or level != "send":
        assert how == "keep" and why
    else:
        assert how == ("now" if window == "instant" else "window")
    assert commits(layer, agent=False, level=level, window=window, sensitive=sensitive)[0] == "now"


def test_hip0528_09_4_rule_4_an_agent_is_answered_no_setting_that_governs_it():
    loaded = [(m, "hanzo") for m in activated(HANZO)[0]]
    mine = {e.id for e in surface.entries(loaded)}
    agents = {e.id for e in surface.entries(loaded, for_agent=True)}
    assert mine - agents == {"hanzo/settings/ladder-level", "hanzo/settings/ladder-window",
                             "hanzo/settings/ladder-ceiling"}  # fmt: skip


def test_the_shipped_first_party_data_is_what_the_service_loads():
    shipped = json.loads(SHIPPED.read_text())["mods"]
    assert [msgspec.convert(copy.deepcopy(m), Manifest) for m in shipped] == HANZO


def _draft() -> LayerDraft:
    at = datetime(2026, 11, 30, tzinfo=UTC)
    return LayerDraft(id="md-0123456789abcdef", layer="user", base=0, ops=[Hide(kind="apps",
                      id="hanzo/board/board")], note="", writer="acme/ada", state="open",
                      created_at=at, expires_at=at)  # fmt: skip


def test_a_claimed_draft_is_only_kept_and_a_claim_let_go_leaves_it_as_it_was():
    draft = _draft()
    held = drafts.opened(HeldDrafts(), draft)
    claimed = drafts.claimed(held, draft.id)
    assert claimed.keeping == (draft.id,) and claimed.last is None  # no watch event
    assert drafts.claimed(claimed, draft.id) == claimed  # a Keep asked again completes it
    for state in ("discarded", "expired"):
        with pytest.raises(Refused) as refused:
            drafts.settled(claimed, draft.id, state)
        assert refused.value.problem.rule == "draft-closed"
    assert drafts.released(claimed, draft.id).open == held.open
    assert drafts.released(claimed, draft.id).keeping == ()
    kept = drafts.settled(claimed, draft.id, "kept", version=3)
    assert (kept.open, kept.keeping, kept.closed[0].version) == ([], (), 3)
    with pytest.raises(Refused):
        drafts.claimed(kept, draft.id)


def test_a_layer_s_open_drafts_are_counted_over_every_writer():
    """Sixteen open over the layer: a writer with none of them still opens no seventeenth."""
    draft = _draft()
    assert drafts.opened(HeldDrafts(), draft, elsewhere=15).open == [draft]
    with pytest.raises(Refused) as refused:
        drafts.opened(HeldDrafts(), draft, elsewhere=16)
    assert refused.value.problem.rule == "drafts-full"


_HELD_MOVES = {
    "claim": lambda h: drafts.claimed(h, "md-0123456789abcdef"),
    "release": lambda h: drafts.released(h, "md-0123456789abcdef"),
    "keep": lambda h: drafts.settled(h, "md-0123456789abcdef", "kept", version=1),
    "discard": lambda h: drafts.settled(h, "md-0123456789abcdef", "discarded"),
    "expire": lambda h: drafts.settled(h, "md-0123456789abcdef", "expired"),
}


@given(st.lists(st.sampled_from(sorted(_HELD_MOVES)), max_size=8))
def test_a_claimed_draft_closes_only_as_kept_and_a_closed_one_never_moves(moves):
    held = drafts.opened(HeldDrafts(), _draft())
    for move in moves:
        before = held
        with contextlib.suppress(Refused):
            held = _HELD_MOVES[move](held)
        if not before.open:
            assert (held.open, held.closed) == (before.open, before.closed)
        if before.keeping and not held.open:
            assert held.closed[0].state == "kept"
