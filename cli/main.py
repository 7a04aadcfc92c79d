"""tether's command line: run the whole system here (`up`), make a development token,
print the contracts, the NATS config or the Kubernetes base, announce accounts, put an org
on a plan, run Power of Action vectors, verify an org's audit chain, read or send again
dead letters, and read what left by the lines."""

import argparse
import asyncio
import json
import os
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from importlib.metadata import version
from typing import TYPE_CHECKING, TypeVar, get_args

from libs.contracts import EXTERNAL_EVENTS, SERVICES
from libs.contracts.document import document
from libs.runtime import logs
from libs.runtime.settings import BadSetting, LogLevel, Settings, checked_nats_url
from libs.stack.home import Home, NotMade

if TYPE_CHECKING:
    from nats.aio.client import Client

__all__ = ["main"]

T = TypeVar("T")

DEV_ORG, DEV_USER = "acme", "acme/ada"
# Development accounts `tether up` creates, each announced like any account, so each gets
# its agent the way every person does.
DEV_ACCOUNTS = (DEV_USER, "acme/bob")
# How long a command asks a service again that is away for a moment: long enough for the
# services `tether up` starts to serve.
_PATIENCE_S = 30


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return args.run(args)
    except NotMade as exc:
        print(f"tether: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # Its reader had what it wanted (`tether contracts | head`), as Python's signal
        # docs advise: stdout pointed at devnull, so the exit's flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _up(args: argparse.Namespace) -> int:
    from libs.contracts.permissions import OPERATOR
    from libs.stack.servers import port_from_env
    from libs.stack.up import up

    level = os.environ.get("TETHER_LOG_LEVEL") or "INFO"
    if level not in get_args(LogLevel):
        levels = ", ".join(get_args(LogLevel))
        print(f"tether up: TETHER_LOG_LEVEL={level!r}: one of {levels}", file=sys.stderr)
        return 1
    try:  # else every process it starts would stop on it, over and over
        if nats_url := os.environ.get("NATS_URL"):
            checked_nats_url(nats_url)
    except BadSetting as exc:
        print(f"tether up: {exc}", file=sys.stderr)
        return 1
    logs.configure("tether-up", f"up-{os.getpid()}", level)
    home = Home()

    def ready(url: str, nats_url: str) -> None:
        asyncio.run(_announced(home.password(OPERATOR), DEV_ACCOUNTS, nats_url))
        token = _mint(home.jwt_key(), org=DEV_ORG, user=DEV_USER, roles=("admin",), act=None)
        print(f"\ntether is up at {url}  (state in {home.root})", flush=True)
        print(f"development token for {DEV_USER}, admin of {DEV_ORG}:\n{token}", flush=True)
        print(f"console: {url}/console (paste the token)", flush=True)
        print(f"try: curl -H 'Authorization: Bearer <token>' {url}/v1/agents/me\n", flush=True)

    try:
        port = port_from_env("TETHER_PORT", 8080)
        return up(home, port=port, on_ready=ready, cluster=args.cluster)
    except RuntimeError as exc:  # a server or process would not start: say which, and where
        print(
            f"tether up: {exc} (logs: {home.root}/nats, {home.root}/redis, stderr above)",
            file=sys.stderr,
        )
        return 1


def _token(args: argparse.Namespace) -> int:
    """A token the gateway takes, or none: one it would refuse (an `--act` that is another
    person's agent, a role or act with a control character) is named, exit 2."""
    from libs.contracts.problem import Refused
    from services.gateway.tokens import principal_from

    key = Home().jwt_key()
    token = _mint(key, org=args.org, user=args.user, roles=tuple(args.role), act=args.act)
    try:
        principal_from(f"Bearer {token}", key)
    except Refused as exc:
        print(f"tether token: the gateway would refuse it: {exc.problem.detail}", file=sys.stderr)
        return 2
    print(token)
    return 0


def _contracts(_: argparse.Namespace) -> int:
    print(json.dumps(document(SERVICES, EXTERNAL_EVENTS), indent=2))
    return 0


def _nats_config(args: argparse.Namespace) -> int:
    from libs.stack.servers import nats_config
    from libs.stack.up import ROLES

    home = Home()
    config = nats_config(
        port=args.port,
        monitor_port=args.monitor_port,
        store_dir=home.nats_dir / "jetstream",
        passwords=home.ensure(ROLES),
        services=SERVICES,
    )
    if args.auth_only:  # nats-server's config syntax takes `key: <json>` at the top level
        print(f"authorization: {json.dumps(config['authorization'], indent=2)}")
    else:
        print(json.dumps(config, indent=2))
    return 0


def _k8s(args: argparse.Namespace) -> int:
    from pathlib import Path

    from libs.stack.k8s import base

    files = base()
    if args.write is None:
        for name, text in files.items():
            print(f"--- {name}\n{text}")
        return 0
    try:
        for name, text in files.items():
            (Path(args.write) / name).write_text(text)
    except OSError as exc:
        print(f"tether k8s: cannot write to {args.write}: {exc.strerror}", file=sys.stderr)
        return 2
    print(f"wrote {len(files)} files to {args.write}")
    return 0


def _account_created(args: argparse.Namespace) -> int:
    """Announce each account, asked again while the bus or its stream is away for a moment
    (the system starting, a node failing over): the announcement's id makes a second one of
    the same account no second announcement."""
    from libs.runtime.bus import PEER_OR_BUS_AWAY

    async def run() -> int:
        if (nc := await _reached()) is None:
            return 2
        try:
            for user in args.user:
                await _patiently("tether account created", partial(_announce, nc, user))
        except PEER_OR_BUS_AWAY:  # said
            return 2
        finally:
            await nc.close()
        print(f"announced {len(args.user)} account(s)")
        return 0

    return asyncio.run(run())


async def _announce(nc: "Client", user: str) -> None:
    """Publish `account.created` for `user`, as an identity provider's hook would."""
    import msgspec

    from libs.contracts.accounts import ACCOUNT_CREATED, AccountCreated

    event = msgspec.convert({"user": user}, AccountCreated)
    await nc.jetstream().publish(
        ACCOUNT_CREATED.name, msgspec.json.encode(event), headers={"Nats-Msg-Id": f"account-{user}"}
    )


async def _announced(password: str, users: tuple[str, ...], url: str) -> None:
    nc = await _operator(password, url)
    try:
        for user in users:
            await _announce(nc, user)
    finally:
        await nc.close()


async def _operator(password: str, url: str):
    import nats

    from libs.contracts.permissions import OPERATOR, inbox_prefix

    return await nats.connect(
        url.split(","),
        user=OPERATOR,
        password=password,
        inbox_prefix=inbox_prefix(OPERATOR),
        allow_reconnect=False,
        max_reconnect_attempts=1,
        connect_timeout=3,
        error_cb=_quiet,
    )


async def _reached():
    """The operator's connection to the bus, or None once said why: a command answers now,
    with no waiting for a server that is not there."""
    from libs.contracts.permissions import OPERATOR

    password, url = Home().password(OPERATOR), _nats_url()
    try:
        return await _operator(password, url)
    except Exception as exc:
        print(f"cannot reach NATS at {url}: {exc!r}", file=sys.stderr)
        return None


async def _patiently(
    command: str, ask: Callable[[], Awaitable[T]], *, also: tuple[type[Exception], ...] = ()
) -> T:
    """`ask()`'s answer, asked again after a transient failure (a service not serving yet, as
    `tether up` starts; or one of `also`, transient to this command) for up to `_PATIENCE_S`,
    then the last failure said and raised. Said once as it begins too, so the wait is not
    taken for a hang. The command's connection does not reconnect: once closed (its server
    stopped), asking again cannot help."""
    from nats.errors import ConnectionClosedError

    from libs.runtime.bus import PEER_OR_BUS_AWAY

    deadline, pause = time.monotonic() + _PATIENCE_S, 0.25
    while True:
        try:
            return await ask()
        except ConnectionClosedError:
            print(f"{command}: the connection to NATS at {_nats_url()} closed; not asked again",
                  file=sys.stderr)  # fmt: skip
            raise
        except (*PEER_OR_BUS_AWAY, *also) as exc:
            if time.monotonic() + pause > deadline:
                print(f"{command}: {exc}; still so after {_PATIENCE_S} s", file=sys.stderr)
                raise
            if pause == 0.25:
                print(f"{command}: {exc}; asking again for up to {_PATIENCE_S} s",
                      file=sys.stderr, flush=True)  # fmt: skip
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)


def _plan(args: argparse.Namespace) -> int:
    """Put an org on a plan of the catalog, as a billing system's hook would: the agents
    and bots it may make, its rooms' size. Recorded on the org's chain as the operator's.
    Asked again after a transient failure under one key, so it is set and recorded once."""
    from libs.contracts.agents import PLAN, SetPlan
    from libs.contracts.permissions import OPERATOR
    from libs.contracts.principal import Principal
    from libs.contracts.problem import Refused
    from libs.runtime.bus import PEER_OR_BUS_AWAY
    from libs.runtime.calls import call
    from libs.runtime.consumer import SYSTEM_ORG

    async def run() -> int:
        if (nc := await _reached()) is None:
            return 2
        by, key = Principal(org=SYSTEM_ORG, sub=OPERATOR), uuid.uuid4().hex
        put = SetPlan(org=args.org, plan=args.plan)
        try:
            await _patiently(
                "tether plan", partial(call, nc, PLAN, put, caller=OPERATOR, principal=by, key=key)
            )
        except PEER_OR_BUS_AWAY:  # said
            return 2
        except Refused as exc:
            print(f"tether plan: {exc.problem.detail}", file=sys.stderr)
            return 1
        finally:
            await nc.close()
        print(f"{args.org} is on plan {args.plan}")
        return 0

    return asyncio.run(run())


def _audit_verify(args: argparse.Namespace) -> int:
    from libs.audit.chain import breaks
    from libs.audit.reading import stored

    async def verify() -> int:
        if (nc := await _reached()) is None:
            return 2
        try:
            chain = [m async for m in stored(nc.jetstream(), args.org)]
        finally:
            await nc.close()
        valid, found = breaks(chain, org=args.org)
        if not chain:  # an org that changed nothing yet, or a name mistyped: not "intact"
            print(f"{args.org}: no records")
            return 0
        if not found:
            print(f"{args.org}: {valid} records, chain intact")
            return 0
        for broken in found:
            print(f"{args.org}: sequence {broken.seq} breaks the chain: {broken.reason}")
        print(f"{args.org}: {valid} valid records, {len(found)} not")
        return 1

    return asyncio.run(verify())


def _dead(args: argparse.Namespace) -> int:
    """The dead letters, or one reader's, listed; with `--send-again`, each sent again to
    its subject once its cause is fixed, and removed from DEAD. A letter parked longer ago
    than the services keep what they settled (`TETHER_SETTLED_KEPT`) is held back unless
    `--older`: what its readers did with it then may be forgotten, and done again."""
    from libs.audit.trail import Trail
    from libs.contracts.permissions import OPERATOR
    from libs.contracts.principal import Principal
    from libs.runtime.bus import PEER_OR_BUS_AWAY
    from libs.runtime.consumer import SYSTEM_ORG
    from libs.runtime.dead import parked, sent_again
    from libs.runtime.direct import DirectGetUnavailable

    try:
        kept = timedelta(seconds=Settings.from_env("cli").settled_kept)
    except BadSetting as exc:
        print(f"tether dead: {exc}", file=sys.stderr)
        return 2

    async def run() -> int:
        if (nc := await _reached()) is None:
            return 2
        try:  # DEAD made and not answering (its leader elected, say): read again
            under = await _patiently(
                "tether dead", partial(parked, nc, args.reader), also=(DirectGetUnavailable,)
            )
        except (*PEER_OR_BUS_AWAY, DirectGetUnavailable):  # said
            await nc.close()
            return 2
        trail, by = Trail(nc, service=OPERATOR), Principal(org=SYSTEM_ORG, sub=OPERATOR)
        try:
            if args.reader and not under and args.reader not in (readers := _readers()):
                # A name mistyped would read as "0 parked": said, with the names to give.
                print(
                    f"no reader is named {args.reader!r}; name one of {', '.join(readers)}",
                    file=sys.stderr,
                )
                return 2
            letters = [letter for letter in under if not args.seq or letter.seq in args.seq]
            held_back = 0
            for letter in letters:
                said = f"{letter.at:%Y-%m-%d %H:%M:%S}"
                if args.send_again and (args.older or datetime.now(UTC) - letter.at <= kept):
                    await sent_again(nc, letter, trail, by)
                    said = "sent again"
                elif args.send_again:
                    held_back += 1
                    said = f"held back, parked {said}"
                came = "" if letter.request is None else f" (request {letter.request})"
                print(f"{letter.seq} {said} {letter.reader} {letter.subject}{came}: {letter.error}")
        except Exception as exc:  # transient (DEAD electing a leader, the audit away): ask again
            print(f"cannot send the dead letters again now: {exc!r}; ask again", file=sys.stderr)
            return 2
        finally:
            await trail.settle()
            await nc.close()
        done = "sent again" if args.send_again else "parked"
        print(f"{len(letters) - held_back} dead letter(s) {done}")
        if unfound := sorted(set(args.seq) - {letter.seq for letter in letters}):
            whose = f" by {args.reader}" if args.reader else ""
            print(f"none parked{whose} at {', '.join(map(str, unfound))}", file=sys.stderr)
            return 1
        if held_back:
            print(
                f"{held_back} held back: parked more than {_spoken(kept)} ago, longer than the "
                "services keep what they settled, so what was done with them then may be done "
                "again; --older sends them too",
                file=sys.stderr,
            )
            return 1
        return 0

    if args.send_again and not (args.reader or args.seq):
        print(
            "name the letters to send again: --reader SERVICE.DURABLE or --seq N", file=sys.stderr
        )
        return 2
    return asyncio.run(run())


def _outbox(args: argparse.Namespace) -> int:
    """What left by the lines within the last `--minutes`, oldest first, as the recording
    transport (the only one) keeps it on the ROOMS stream: what a carrier would have
    delivered, a line's code among it. One batched direct get a page, no consumer; read
    again whole while ROOMS is not served yet (made as `tether up` starts, or electing)."""
    from libs.contracts.rooms import ROOMS
    from libs.runtime.bus import PEER_OR_BUS_AWAY
    from libs.runtime.direct import DirectGetRefused, DirectGetUnavailable, batch_get

    subjects = f"rooms.outbound.*.{args.org}" if args.org else "rooms.outbound.>"
    since = datetime.now(UTC) - timedelta(minutes=args.minutes)

    async def read(nc: "Client") -> list[str]:
        sent = []
        request: dict[str, object] = {"start_time": since.isoformat(), "next_by_subj": subjects}
        while True:
            msgs, pending = await batch_get(nc, ROOMS.name, request | {"batch": 256})
            for msg in msgs:
                out = json.loads(msg.data)
                at = datetime.fromisoformat(msg.headers["Nats-Time-Stamp"])
                text = out["text"].replace("\n", " | ")
                sent.append(f"{at:%Y-%m-%d %H:%M:%S} {out['transport']} to {out['to']}: {text}")
            if not msgs or not pending:
                return sent
            request = {"seq": int(msgs[-1].headers["Nats-Sequence"]) + 1, "next_by_subj": subjects}

    async def run() -> int:
        if (nc := await _reached()) is None:
            return 2
        try:
            sent = await _patiently(
                "tether outbox", partial(read, nc), also=(DirectGetUnavailable,)
            )
        except (*PEER_OR_BUS_AWAY, DirectGetUnavailable):  # said
            return 2
        except DirectGetRefused as exc:
            print(f"tether outbox: {exc}", file=sys.stderr)
            return 2
        finally:
            await nc.close()
        for line in sent:
            print(line)
        print(f"{len(sent)} sent by the lines in the last {args.minutes} minutes", file=sys.stderr)
        return 0

    return asyncio.run(run())


def _readers() -> list[str]:
    """What `--reader` may name: each service that reads, and each of its readers."""
    from libs.stack.k8s import consumers

    return [
        name
        for service, reads in consumers().items()
        for name in (service, *sorted({f"{service}.{durable}" for _, durable in reads}))
    ]


def _spoken(span: timedelta) -> str:
    seconds = int(span.total_seconds())
    return f"{seconds // 86400} days" if seconds % 86400 == 0 else f"{seconds} s"


def _poa_vectors(args: argparse.Namespace) -> int:
    from services.poa.domain.conformance import decode, run

    try:
        with open(args.file, "rb") as f:
            outcomes = run(decode(f.read()))
    except (OSError, ValueError) as exc:
        print(f"cannot read {args.file}: {exc}", file=sys.stderr)
        return 2
    failed = [o for o in outcomes if not o.passed]
    for o in failed:
        print(f"FAIL {o.section} {o.case_id}: expected {o.expected}, got {o.actual}")
    print(f"{len(outcomes) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed or not outcomes else 0


def _nats_url() -> str:
    """The server `tether up` started, found the way it found it: NATS_URL, else the
    embedded server's port (each set empty is unset, as the services read them)."""
    port = os.environ.get("TETHER_NATS_PORT") or "4222"
    return os.environ.get("NATS_URL") or f"nats://127.0.0.1:{port}"


async def _quiet(_: Exception) -> None:
    """The command reports its own failure to connect, once."""


def _mint(key: str, **claims: object) -> str:
    from services.gateway.tokens import mint

    return mint(key, now=int(time.time()), **claims)  # type: ignore[arg-type]


def _port(value: str) -> int:
    """A port nats-server would listen on: printed beyond 65535, its config is refused
    only when the server reads it."""
    import msgspec

    from libs.runtime.settings import Port

    try:
        return msgspec.convert(value, Port, strict=False)
    except msgspec.ValidationError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port (0-65535)") from None


def _minutes(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of minutes (1 or more)")
    return int(value)


def _as(kind: str, what: str):
    """An argument checked as the contracts take it (`OrgId`, `UserId`): one the system
    would refuse (a token no gateway takes, an org `>` that reads every org's records) is
    refused here, with what it must be."""

    def checked(value: str) -> str:
        import msgspec

        from libs.contracts import base

        try:
            return msgspec.convert(value, getattr(base, kind))
        except msgspec.ValidationError as exc:
            raise argparse.ArgumentTypeError(f"{value!r} is not {what}: {exc}") from None

    return checked


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tether", description=__doc__)
    parser.add_argument("--version", action="version", version=f"tether {version('tether')}")
    org, person = _as("OrgId", "an org id"), _as("UserId", "a person, OWNER/NAME")
    sub = parser.add_subparsers(required=True)

    p = sub.add_parser("up", help="run the whole system on this machine (state in $TETHER_HOME)")
    p.add_argument(
        "--cluster",
        type=int,
        choices=(1, 3, 5),
        default=1,
        help="NATS nodes: 3 or 5 is the production shape (replicated streams, two of each process)",
    )
    p.set_defaults(run=_up)

    p = sub.add_parser("token", help="print a development token signed with the state's key")
    p.add_argument("--org", required=True, type=org)
    p.add_argument("--user", required=True, type=person, help="OWNER/NAME")
    p.add_argument(
        "--role",
        action="append",
        default=[],
        help="a role (admin) or an agent's scope (mod:read, mod:write); repeatable",
    )
    p.add_argument("--act", help="the agent acting for the user")
    p.set_defaults(run=_token)

    p = sub.add_parser("contracts", help="print every subject and its JSON schemas")
    p.set_defaults(run=_contracts)

    p = sub.add_parser("nats-config", help="print the nats-server config with tether's users")
    p.add_argument("--port", type=_port, default=4222)
    p.add_argument("--monitor-port", type=_port, default=8222)
    p.add_argument(
        "--auth-only", action="store_true", help="only the authorization block, to include"
    )
    p.set_defaults(run=_nats_config)

    p = sub.add_parser("k8s", help="deploy/k8s/base's generated files, from the contracts")
    p.add_argument("--write", metavar="DIR", help="write them into DIR (else print them)")
    p.set_defaults(run=_k8s)

    p = sub.add_parser("poa", help="Power of Action")
    poa = p.add_subparsers(required=True)
    p = poa.add_parser("vectors", help="run every case of a vector file in the official shape")
    p.add_argument("file")
    p.set_defaults(run=_poa_vectors)

    p = sub.add_parser("account", help="accounts")
    account = p.add_subparsers(required=True)
    p = account.add_parser("created", help="announce accounts made elsewhere: each gets its agent")
    p.add_argument("user", nargs="+", type=person, help="OWNER/NAME")
    p.set_defaults(run=_account_created)

    p = sub.add_parser("plan", help="put an org on a plan of the catalog (its capacity)")
    p.add_argument("org", type=org)
    p.add_argument("plan", help="free, pro, team or enterprise: services/agents/catalog.json")
    p.set_defaults(run=_plan)

    p = sub.add_parser("audit", help="the audit trail")
    audit = p.add_subparsers(required=True)
    p = audit.add_parser("verify", help="check an org's hash chain; name every break by sequence")
    p.add_argument("--org", required=True, type=org)
    p.set_defaults(run=_audit_verify)

    p = sub.add_parser(
        "dead", help="what readers parked after every retry failed; --send-again once fixed"
    )
    p.add_argument(
        "--reader", help="SERVICE.DURABLE (e.g. agents.meter), or SERVICE for its every reader"
    )
    p.add_argument("--seq", type=int, action="append", default=[], help="a letter; repeatable")
    p.add_argument(
        "--send-again",
        action="store_true",
        help="publish each to its subject again, for its readers, and remove it from DEAD",
    )
    p.add_argument(
        "--older",
        action="store_true",
        help="with --send-again, also letters parked longer ago than TETHER_SETTLED_KEPT",
    )
    p.set_defaults(run=_dead)

    p = sub.add_parser(
        "outbox", help="what left by the lines, as the recording transport keeps it (codes too)"
    )
    p.add_argument("--org", type=org, help="one org's lines alone")
    p.add_argument("--minutes", type=_minutes, default=60, help="how far back (default 60)")
    p.set_defaults(run=_outbox)
    return parser


if __name__ == "__main__":
    sys.exit(main())
