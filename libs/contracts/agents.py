"""`tether.agents.*`: each person's one agent, the persona library, capacity and the meter.

A persona says who an agent is and never what it may do without its person (hip-0524 §3):
`Persona` has no field for a ladder level, and decoding refuses any field it does not name.
"""

import re
from typing import Annotated, Literal

import msgspec

from libs.contracts.base import Contract, Instant, OrgId, UserId, key_token
from libs.contracts.principal import Principal
from libs.contracts.registry import Event, Subject, request_subject, service_contract
from libs.contracts.streams import StreamSpec

__all__ = [
    "AGENTS_BUCKET",
    "AGENT_REMOVED",
    "CONTRACT",
    "ORG_AGENT",
    "PERSONAL_AGENT",
    "AddPersona",
    "Agent",
    "AgentKind",
    "AgentList",
    "AgentRemoved",
    "AgentRuntime",
    "Allowance",
    "Billing",
    "BillingRequest",
    "Capacity",
    "CreateAgent",
    "CreateMine",
    "GetMine",
    "GetPreferences",
    "ListAgents",
    "ListPersonas",
    "ListedPersona",
    "MyAgent",
    "Persona",
    "PersonaList",
    "PersonaName",
    "PlanLimits",
    "PlanLimitsRequest",
    "PlanSet",
    "Preferences",
    "RemoveAgent",
    "RunEnded",
    "SetPlan",
    "Speak",
    "Spoken",
    "StandingRequest",
    "org_agent_key",
]

PersonaName = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,31}$(?!\n)")]
Text = Annotated[str, msgspec.Meta(max_length=8000)]
Short = Annotated[str, msgspec.Meta(max_length=200)]
Tool = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_.:-]{0,63}$(?!\n)")]
AgentKind = Literal["personal", "agent", "bot"]
Month = Annotated[str, msgspec.Meta(pattern=r"^[0-9]{4}-(0[1-9]|1[0-2])$(?!\n)")]


class Persona(Contract):
    """Who an agent is: `name` is the handle a person addresses (`cto` for @cto),
    `instructions` the system prompt, `capability_defaults` the tools the job comes with."""

    name: PersonaName
    description: Short
    instructions: Text
    capability_defaults: tuple[Tool, ...] = ()


class ListedPersona(Contract):
    """A persona as the org sees it: a platform preset, or the org's own (which shadows a
    preset of the same name for this org alone)."""

    origin: Literal["platform", "org"]
    persona: Persona


class ListPersonas(Contract):
    """The org's library by name: `limit` after the persona `after`, fewer where a page
    would pass 512 KiB (an org's own personas have no bound in number)."""

    after: PersonaName | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=200)] = 200


class PersonaList(Contract):
    """A page of the library; `next` is the cursor of the page after it, null on the last."""

    personas: list[ListedPersona]
    next: PersonaName | None = None


class AddPersona(Contract):
    """An org admin adds (or replaces) one of the org's own personas."""

    persona: Persona


class Agent(Contract):
    """An agent as stored. A personal agent's `user` is its person and its `org` their home
    org; `id` is what rooms know it by: `agent:<user>`, `agent:<org>` for the org's ambient
    agent, `agent:<org>:<persona>` or `bot:<org>:<persona>` for others."""

    id: str
    org: OrgId
    kind: AgentKind
    persona: PersonaName
    created_at: Instant
    user: UserId | None = None
    ambient: bool = False


AGENTS_BUCKET = "agents"


# `agent:<org>`, `agent:<org>:<name>`, `bot:<org>:<name>`: an org's own agents and bots,
# which act in that org alone (group 1 is the org).
ORG_AGENT = re.compile(r"^(?:agent|bot):([a-z0-9][a-z0-9_-]{0,62})(?::[^:/]+)?$")
# `agent:<person>`: that person's own agent (hip-0524 §2), which acts for them alone (group
# 1 is the person).
PERSONAL_AGENT = re.compile(r"^agent:([^:/]+/[^:]+)$")


def org_agent_key(org: str, agent_id: str) -> str:
    """An org's own agent or bot in `agents`: the agent, or its removal's marker."""
    return f"org.{org}.{key_token(agent_id)}"


class ListAgents(Contract):
    """The org's own agents and bots by id (a person's agent is theirs, never listed here):
    `limit` after the agent `after`."""

    after: Short | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=200)] = 100


class AgentList(Contract):
    """A page of them; `next` is the cursor of the page after it, null on the last."""

    agents: list[Agent]
    next: str | None = None


class GetMine(Contract):
    pass


class CreateMine(Contract):
    """Make my agent, cut from `persona`, if I have none; `self` answers as me, from my
    preferences alone."""

    persona: PersonaName = "self"


class MyAgent(Contract):
    """My agent and the persona it wears, read from the library now, never a copy."""

    agent: Agent
    persona: Persona


class CreateAgent(Contract):
    """An org admin creates an org agent or bot from a persona, within the plan's capacity.
    `ambient` makes it the org's ambient agent, the one that answers what is addressed to
    the org (one per org)."""

    persona: PersonaName
    kind: Literal["agent", "bot"] = "agent"
    ambient: bool = False


class RemoveAgent(Contract):
    """An org admin removes one of the org's own agents or bots: it no longer exists, so it
    answers nothing, runs no more and holds no place of the plan's capacity. A person's
    own agent is theirs (one per person, hip-0524 §1) and is never one of these."""

    id: Annotated[str, msgspec.Meta(max_length=200, pattern=r"^(agent|bot):[^/\s]+$(?!\n)")]


class AgentRemoved(Contract):
    """One of `org`'s own agents or bots, removed by `by`, an admin of it. `made_at` is when
    the agent removed was made: its readers act once that one is gone, and on what was its
    alone, not an agent's made again under its id since (`libs.standing`). The release that
    named it set it nowhere."""

    org: OrgId
    agent: str
    by: Principal
    made_at: Instant | None = None


class StandingRequest(Contract):
    """Whether `org` has its own agent or bot `id` now, as the bucket's leader holds it."""

    org: OrgId
    id: Annotated[str, msgspec.Meta(max_length=200)]


AGENT_REMOVED = Event(
    "tether.evt.agents.agent.removed",
    AgentRemoved,
    "an org's agent or bot was removed: the grants naming it as their delegate are revoked, "
    "and it leaves its rooms",
    readers=frozenset({"poa", "rooms"}),
)


class Preferences(Contract):
    """The person's own document: they alone read and write it; their agent reads it when it
    drafts and keeps no copy."""

    display_name: Short = ""
    instructions: Text = ""
    tone: Short = ""
    signature: Short = ""


class GetPreferences(Contract):
    pass


class SetPlan(Contract):
    """The operator puts an org on a plan of the catalog; an org with none is on `free`."""

    org: OrgId
    plan: Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9-]{0,31}$(?!\n)")]


class PlanSet(Contract):
    org: str
    plan: str


class PlanLimitsRequest(Contract):
    """What an org's plan allows, for a service that enforces a number of it."""

    org: OrgId


class PlanLimits(Contract):
    plan: str
    room_members: int


class BillingRequest(Contract):
    """This month (UTC) unless `month` (`YYYY-MM`) is given; its agents by id, `limit`
    after the agent `after`."""

    month: Month | None = None
    after: Short | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=200)] = 100


class Allowance(Contract):
    """`allowed` -1 is unlimited."""

    allowed: int
    in_use: int


class Capacity(Contract):
    """What may exist. Personal agents are one per person and never refused for capacity;
    `agents` and `bots` are the org's own, capped by the plan."""

    personal_agents: int
    agents: Allowance
    bots: Allowance


class AgentRuntime(Contract):
    """One agent's metered runtime in the month: whose it is and what it cost, nothing of
    what it read or wrote."""

    agent: str
    kind: AgentKind
    user: str | None
    runs: int
    seconds: int
    amount_usd: str


class Billing(Contract):
    """The org admin's bill: capacity in use (which refuses) and runtime (which bills), at
    the catalog's one hourly rate, per second of runtime. The totals are the month's
    whole; `agents` a page of them, `next` the cursor of the page after it."""

    org: str
    plan: str
    month: str
    capacity: Capacity
    rate_usd_per_hour: str
    seconds: int
    hours: str
    amount_usd: str
    agents: list[AgentRuntime]
    next: str | None = None


class RunEnded(Contract):
    """One drafting run, as the meter reads it from the METER stream."""

    run: str
    org: OrgId
    agent: str
    kind: AgentKind
    user: str | None
    started_at: Instant
    ended_at: Instant


class Speak(Contract):
    """The rooms service, on a live call the ladder lets the agent take: `person`'s agent's
    reply in `room`, to the history up to `upto`, now."""

    org: OrgId
    person: UserId
    room: str
    upto: Annotated[int, msgspec.Meta(ge=1)]


class Spoken(Contract):
    text: str


def _subject(verb: str, request: type, reply: type, summary: str, **fields: object) -> Subject:
    return request_subject("agents", verb, request, reply, summary, **fields)


GET_MINE = _subject("mine", GetMine, MyAgent, "my agent and its persona")
CREATE_MINE = _subject("create_mine", CreateMine, MyAgent, "make my agent from a persona")
PERSONAS = _subject("personas", ListPersonas, PersonaList, "the persona library of my org")
ADD_PERSONA = _subject("add_persona", AddPersona, ListedPersona, "add an org persona (admin)")
CREATE = _subject("create", CreateAgent, Agent, "create an org agent from a persona (admin)")
ORG_AGENTS = _subject("org_agents", ListAgents, AgentList, "the org's own agents and bots (admin)")
REMOVE = _subject("remove", RemoveAgent, Agent, "remove an org agent or bot (admin)")
PREFERENCES = _subject("preferences", GetPreferences, Preferences, "my preferences")
SET_PREFERENCES = _subject("set_preferences", Preferences, Preferences, "replace my preferences")
BILLING = _subject("billing", BillingRequest, Billing, "capacity in use and metered runtime")
PLAN = _subject("plan", SetPlan, PlanSet, "put an org on a plan", callers=frozenset({"operator"}))
LIMITS = _subject(
    "limits",
    PlanLimitsRequest,
    PlanLimits,
    "what an org's plan allows",
    callers=frozenset({"rooms"}),
    by_caller=True,
)

STANDING = _subject(
    "standing",
    StandingRequest,
    Agent,
    "an org's own agent or bot, if it stands (404 if never made or removed)",
    callers=frozenset({"poa", "rooms"}),
    by_caller=True,
)
SPEAK = _subject(
    "speak",
    Speak,
    Spoken,
    "what a person's agent says now, on a live call in one of their rooms",
    callers=frozenset({"rooms"}),
    by_caller=True,
)

# Each run as it ended (its start in it), one subject per org; the meter reads them in order.
METER = StreamSpec(
    "METER", ("agents.run.>",), "agent runs, each as it ended: agents.run.ended.<org>"
)

CONTRACT = service_contract(
    "agents",
    [
        GET_MINE,
        CREATE_MINE,
        PERSONAS,
        ADD_PERSONA,
        CREATE,
        ORG_AGENTS,
        REMOVE,
        PREFERENCES,
        SET_PREFERENCES,
        BILLING,
        PLAN,
        LIMITS,
        STANDING,
        SPEAK,
    ],
    events=(AGENT_REMOVED,),
    buckets=(
        AGENTS_BUCKET,
        "agents-personas",
        "agents-preferences",
        "agents-meter",
        "agents-making",
        "agents-replies",
        "agents-awaiting",
    ),
    streams=(METER,),
    # The gateway takes a token acting as an org's agent or bot only while it stands.
    gateway_reads=(AGENTS_BUCKET,),
)
