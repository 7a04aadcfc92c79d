"""The HTTP API's route table: each route forwards to one subject of the registry."""

import functools
import re
from typing import Literal

import msgspec

from libs.contracts import agents, chonk, ladder, mod, pending, poa, rooms
from libs.contracts.registry import Subject

__all__ = ["LOCATED", "ROUTES", "Route"]

# A reply's field in a route's `location`: `{id}`, or a field's field, `{draft.id}`.
LOCATED = re.compile(r"{([\w.]+)}")


class Route(msgspec.Struct, frozen=True):
    """`method path` → `subject`. Path parameters and `query` names become request fields.

    `kind` json forwards a JSON request with the caller's token; `webhook` forwards a
    carrier's signed request as it arrived, with no token; `stream` sends a room's messages
    as server-sent events, once `subject` says the caller is a member; `watch` streams the
    changes to the caller's own layers and drafts (of which `subject` is the vocabulary);
    `pending` gathers what waits on the caller from several services, and `pending_stream`
    sends it again whenever it changes.
    `delegates` admits a grant's delegate (an agent that is not the person's own), which
    the service then holds to the grants that name it. A reply whose field `accepted` is
    set is answered 202 (a write held as a draft); a 204 answers no body. A `twiml` webhook
    answers the reply's `twiml` as text/xml: what a carrier does with a live call; a
    webhook from a transport in `acknowledged_in_twiml` is answered an empty TwiML
    `<Response/>` (what its carrier runs) unless the caller accepts application/json; a
    `handshake` webhook the reply's `challenge` as text/plain: a carrier's subscription.
    `location` is the path of what a 201 made or a 202 holds, where it is read: its
    `{names}` are the reply's fields (`draft.id` a field's field); the answer's Location
    when each is set.
    """

    method: str
    path: str
    subject: Subject
    summary: str
    status: int = 200
    query: tuple[str, ...] = ()
    kind: Literal["json", "webhook", "stream", "watch", "pending", "pending_stream"] = "json"
    delegates: bool = False
    accepted: str | None = None
    twiml: bool = False
    acknowledged_in_twiml: tuple[str, ...] = ()
    handshake: bool = False
    location: str | None = None

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(re.findall(r"{(\w+)}", self.path))

    @property
    def has_body(self) -> bool:
        """A POST, PUT or PATCH, but for one whose request its path and query give whole
        (an agent removed, a draft kept): that takes no body, or an empty object."""
        if self.method not in ("POST", "PUT", "PATCH"):
            return False
        if self.kind == "webhook":
            return True
        return not _named(self.subject.request) <= {*self.path_params, *self.query}


@functools.cache
def _named(request: type) -> frozenset[str]:
    """The fields a request type names, as JSON names them: read once, as each request
    asks whether its route takes a body."""
    return frozenset(f.encode_name for f in msgspec.structs.fields(request))


ROUTES: tuple[Route, ...] = (
    Route(
        "GET",
        "/v1/pending",
        pending.PENDING,
        "Everything waiting on me, across rooms and services, with what each admits",
        kind="pending",
    ),
    Route(
        "GET",
        "/v1/pending/stream",
        pending.PENDING,
        "What waits on me, as server-sent events: the whole list each time it changes",
        kind="pending_stream",
    ),
    Route("POST", "/v1/poa/verify", poa.VERIFY, "Verify an act against grants given whole"),
    Route("POST", "/v1/poa/contain", poa.CONTAIN, "Is a child grant contained in its parent"),
    Route(
        "POST",
        "/v1/poa/grants",
        poa.ISSUE,
        "Issue a root grant in my name",
        status=201,
        location="/v1/poa/grants/{id}",
    ),
    Route("GET", "/v1/poa/grants", poa.LIST, "My grants, a page", query=("after", "limit")),
    Route("GET", "/v1/poa/grants/{id}", poa.GET, "One of my grants"),
    Route("POST", "/v1/poa/grants/{id}/revoke", poa.REVOKE, "Revoke a grant and its descendants"),
    Route(
        "POST",
        "/v1/poa/grants/{id}/children",
        poa.DELEGATE,
        "Delegate a child",
        status=201,
        delegates=True,
        location="/v1/poa/grants/{id}",
    ),
    Route(
        "POST",
        "/v1/poa/grants/{id}/acts",
        poa.ACT,
        "Verify an act on a grant; record it (202 when it asks the person)",
        delegates=True,
        accepted="ask",
        location="/v1/poa/asks/{ask}",
    ),
    Route("GET", "/v1/poa/asks", poa.ASKS, "The asks waiting on me"),
    Route("GET", "/v1/poa/asks/{id}", poa.ASK, "An ask: mine, or my agent's own", delegates=True),
    Route("POST", "/v1/poa/asks/{id}/answer", poa.ANSWER, "Approve or decline an ask of mine"),
    Route("GET", "/v1/agents/me", agents.GET_MINE, "My agent and the persona it wears"),
    Route(
        "POST",
        "/v1/agents/me",
        agents.CREATE_MINE,
        "Make my agent from a persona",
        status=201,
        location="/v1/agents/me",
    ),
    Route(
        "GET",
        "/v1/agents/personas",
        agents.PERSONAS,
        "The persona library of my org, a page",
        query=("after", "limit"),
    ),
    Route(
        "POST", "/v1/agents/personas", agents.ADD_PERSONA, "Add an org persona (admin)", status=201
    ),
    Route(
        "GET",
        "/v1/agents",
        agents.ORG_AGENTS,
        "The org's own agents and bots, a page (admin)",
        query=("after", "limit"),
    ),
    Route(
        "POST",
        "/v1/agents",
        agents.CREATE,
        "Create an org agent from a persona (admin)",
        status=201,
    ),
    Route(
        "POST",
        "/v1/agents/{id}/remove",
        agents.REMOVE,
        "Remove an org agent or bot: it answers nothing more and frees its place (admin)",
    ),
    Route("GET", "/v1/preferences", agents.PREFERENCES, "My preferences"),
    Route("PUT", "/v1/preferences", agents.SET_PREFERENCES, "Replace my preferences"),
    Route(
        "GET",
        "/v1/billing",
        agents.BILLING,
        "Capacity in use and metered runtime (admin)",
        query=("month", "after", "limit"),
    ),
    Route(
        "POST", "/v1/rooms", rooms.CREATE, "Create a room", status=201, location="/v1/rooms/{id}"
    ),
    Route("GET", "/v1/rooms", rooms.LIST, "The rooms I am a member of", query=("after", "limit")),
    Route("GET", "/v1/rooms/{id}", rooms.GET, "A room I am a member of"),
    Route(
        "GET",
        "/v1/rooms/{id}/messages",
        rooms.MESSAGES,
        "Messages after a cursor",
        query=("after", "limit"),
    ),
    Route("POST", "/v1/rooms/{id}/messages", rooms.SEND, "Send a message", status=201),
    Route(
        "GET",
        "/v1/rooms/{id}/messages/stream",
        rooms.GET,
        "New messages as server-sent events (Last-Event-ID resumes)",
        kind="stream",
    ),
    Route(
        "POST",
        "/v1/rooms/{id}/messages/{seq}/dismiss",
        rooms.DISMISS,
        "Dismiss the failed delivery of a message of mine from what waits on me",
    ),
    Route("POST", "/v1/rooms/{id}/questions", rooms.ASK, "Ask a confirmation question", status=201),
    Route(
        "POST",
        "/v1/rooms/{id}/questions/{seq}/answer",
        rooms.ANSWER,
        "Answer a question: pick, edit or decline",
        status=201,
    ),
    Route("GET", "/v1/rooms/{id}/drafts", rooms.DRAFTS, "My agent's open drafts in a room"),
    Route(
        "POST",
        "/v1/rooms/{id}/drafts/{draft}/send",
        rooms.SEND_DRAFT,
        "Send a draft (or my text in its place) as my message",
        status=201,
    ),
    Route("POST", "/v1/rooms/{id}/drafts/{draft}/discard", rooms.DISCARD_DRAFT, "Discard a draft"),
    Route(
        "POST", "/v1/lines", rooms.CONNECT, "Claim my own line; a code is sent to it", status=201
    ),
    Route(
        "POST",
        "/v1/lines/{transport}/verify",
        rooms.VERIFY_LINE,
        "Connect my claimed line with the code it received",
    ),
    Route("GET", "/v1/lines", rooms.LINES, "My lines (never their credentials)"),
    Route("DELETE", "/v1/lines/{transport}", rooms.DISCONNECT, "Disconnect my line"),
    Route("GET", "/v1/ladder", ladder.GET, "My ladder, my org's ceiling, the windows offered"),
    Route("PUT", "/v1/ladder", ladder.CHANGE, "Change my level at one scope"),
    Route("PUT", "/v1/ladder/window", ladder.WINDOW, "Choose my window"),
    Route("PUT", "/v1/ladder/ceiling", ladder.CEILING, "Set or lift my org's ceiling (admin)"),
    Route(
        "GET",
        "/v1/ladder/effective",
        ladder.APPLIES,
        "The level and window that apply in a room of mine, and which setting decided it",
        query=("room", "transport"),
    ),
    Route("GET", "/v1/windows", ladder.WINDOWS, "My pending sends, with the time left"),
    Route("POST", "/v1/windows/{id}/edit", ladder.EDIT, "Send my edit instead", status=201),
    Route("POST", "/v1/windows/{id}/replace", ladder.REPLACE, "Send my text instead", status=201),
    Route("POST", "/v1/windows/{id}/stop", ladder.STOP, "Stop a pending send"),
    Route("GET", "/v1/confirmations", ladder.CONFIRMATIONS, "The confirmations asked of me"),
    Route("POST", "/v1/confirmations/{id}", ladder.CONFIRM, "Pick, edit or decline"),
    Route("GET", "/v1/mod/surface", mod.SURFACE, "What my app can be changed through"),
    Route("GET", "/v1/mod/composed", mod.COMPOSED, "What a host draws for me: hanzo, org, user"),
    Route(
        "GET",
        "/v1/mod/composed/org",
        mod.ORG_COMPOSED,
        "What my org draws for every member before their own changes: hanzo, org",
    ),
    Route("GET", "/v1/mod/installs", mod.INSTALLS, "The mods installed for me"),
    Route(
        "POST",
        "/v1/mod/installs",
        mod.INSTALL,
        "Install a mod pinned to a digest, with its permissions consented",
        status=201,
    ),
    Route(
        "DELETE",
        "/v1/mod/installs/{publisher}/{id}",
        mod.UNINSTALL,
        "Uninstall a mod (from `layer`: as an install names it)",
        query=("layer",),
    ),
    Route("GET", "/v1/mod/layers/{layer}", mod.LAYER, "A layer: its version, ops and last change"),
    Route(
        "POST",
        "/v1/mod/layers/{layer}",
        mod.WRITE,
        "Write a layer at its version (202 when held as a draft)",
        accepted="draft",
        location="/v1/mod/drafts/{draft.id}",
    ),
    Route(
        "GET",
        "/v1/mod/layers/{layer}/versions",
        mod.VERSIONS,
        "A layer's versions, newest first, a page",
        query=("before", "limit"),
    ),
    Route(
        "POST", "/v1/mod/layers/{layer}/revert", mod.REVERT, "Write a new version equal to an old"
    ),
    Route("GET", "/v1/mod/drafts", mod.DRAFTS, "The drafts over my layers I may see"),
    Route("GET", "/v1/mod/drafts/{id}", mod.DRAFT, "One draft"),
    Route(
        "GET",
        "/v1/mod/drafts/{id}/composed",
        mod.DRAFT_COMPOSED,
        "What I am drawn with the draft over the layer it would change, as a host shows it",
    ),
    Route("POST", "/v1/mod/drafts/{id}/commit", mod.KEEP, "Keep a draft: commit it at its base"),
    Route("DELETE", "/v1/mod/drafts/{id}", mod.DISCARD, "Discard a draft", status=204),
    Route(
        "GET",
        "/v1/mod/watch",
        mod.SURFACE,
        "New versions of my layers and changes to my drafts, as server-sent events",
        kind="watch",
    ),
    Route(
        "POST",
        "/v1/chonk/runs",
        chonk.START,
        "Run a Chonk on a simulation tenant (admin)",
        status=201,
        location="/v1/chonk/runs/{id}",
    ),
    Route(
        "POST",
        "/v1/chonk/cadences",
        chonk.CADENCE,
        "Start a tenant's cadence: its run each time it comes round (admin)",
        status=201,
    ),
    Route("GET", "/v1/chonk/cadences", chonk.CADENCES, "My org's cadences that run (admin)"),
    Route(
        "DELETE",
        "/v1/chonk/cadences/{cadence}",
        chonk.STOP_CADENCE,
        "Stop a cadence: its run comes round no more (admin)",
    ),
    Route(
        "GET",
        "/v1/chonk/runs",
        chonk.RUNS,
        "My org's runs, newest first, a page (admin)",
        query=("after", "limit"),
    ),
    Route("GET", "/v1/chonk/runs/{id}", chonk.REPORT, "A run's receipt and actions (admin)"),
    Route(
        "GET",
        "/v1/chonk/packets",
        chonk.PACKETS,
        "The HUMAN_ONLY packets I decide, a page",
        query=("after", "limit", "state"),
    ),
    Route(
        "POST",
        "/v1/chonk/packets/{id}/decided",
        chonk.DECIDED,
        "Say I have decided a packet: it leaves what waits on me",
    ),
    Route("GET", "/v1/chonk/roster", chonk.CHONKS, "My org's Chonks, each by its title"),
    Route("GET", "/v1/chonk/voice", chonk.VOICE, "My org's voice for its Chonks (admin)"),
    Route(
        "PUT",
        "/v1/chonk/voice",
        chonk.SET_VOICE,
        "Set my org's voice for its Chonks, whole: the tone dial and their names (admin)",
    ),
    Route("POST", "/v1/chonk/messages", chonk.MESSAGE, "Write to one of my org's Chonks"),
    Route("GET", "/v1/chonk/knows", chonk.KNOWS, "What my manager knows about me, and who read it"),
    Route(
        "POST",
        "/v1/chonk/memory/{id}",
        chonk.ANSWER,
        "Redact a fact about me, or answer it where it may not be deleted",
    ),
    Route(
        "POST",
        "/v1/lines/{transport}/inbound",
        rooms.INBOUND,
        "A carrier's webhook, verified by the line's own signing secret; a text's Twilio is "
        "answered <Response/> (TwiML) unless it accepts application/json",
        kind="webhook",
        acknowledged_in_twiml=("sms",),
    ),
    Route(
        "GET",
        "/v1/lines/{transport}/inbound",
        rooms.CHALLENGE,
        "Meta's subscription handshake: the challenge said back for a line's verify token",
        kind="webhook",
        handshake=True,
    ),
    Route(
        "POST",
        "/v1/lines/{transport}/call",
        rooms.CALL,
        "A carrier's inbound call on a voice line: TwiML, the agent speaking only at send",
        kind="webhook",
        twiml=True,
    ),
    Route(
        "POST",
        "/v1/lines/{transport}/voicemail",
        rooms.VOICEMAIL,
        "The voicemail a call the agent did not take left, into the person's room: TwiML",
        kind="webhook",
        twiml=True,
    ),
    Route(
        "POST",
        "/v1/lines/{transport}/status",
        rooms.STATUS,
        "A carrier's status callback for a message that left by a line, verified the same way",
        kind="webhook",
    ),
)
