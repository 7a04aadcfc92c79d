"""The console's pages as served: each with a Content-Security-Policy that lets run only
its own inline script and style (by their hashes) and the console's scripts, talk to this
origin alone, and be framed by no one. A person pastes their token into these pages."""

import base64
import hashlib
import re
from collections.abc import Mapping

__all__ = ["HARDENED", "PAGES", "SCRIPTS", "policy"]

# The console's pages and their scripts by path, each with what it is; a page is served from
# the file named by its path's last part and `.html`, a script from the one its path names.
PAGES: Mapping[str, str] = {
    "/console": "The console: what waits on me, who my agent is, its preferences and lines, "
    "and what it may send without me (the token is entered on the page).",
    "/console/layout": "The console's page for a person's own layer (and to an admin, their "
    "org's): the composed rail and settings, drafts to keep or discard with the time left, "
    "versions to revert to.",
    "/console/knows": "The console's knows page: the facts the manager agents keep about me, "
    "who read each for what, and redact or answer; and a message to one of them.",
    "/console/runs": "The owner console, to an admin: their org's Chonk runs, each message "
    "with its sources beside it, its rule evaluations as a table; the cadences that run.",
    "/console/org": "To an admin, their org: the personas its agents wear (added or changed "
    "there), its own agents and bots (made there), the mods installed for it (uninstalled "
    "there), the bill by month.",
}
SCRIPTS: Mapping[str, str] = {
    "/console/console.js": "What the console's pages share: the token, the API called with it.",
    "/console/waiting.js": "The first page's list of what waits on the person, live.",
    "/console/agent.js": "The first page's part on who the person's agent is.",
    "/console/ladder.js": "The first page's part on what the agent may send without them.",
}
_INLINE = re.compile(rb"<(script|style)>(.*?)</\1>", re.DOTALL)
# The pages and their script: each read as the type it says, and no page they link to
# learns where the person came from.
HARDENED: Mapping[str, str] = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def policy(page: bytes) -> str:
    """The page's policy, with the hash of each of its inline scripts and styles."""
    hashes: dict[bytes, list[str]] = {b"script": [], b"style": []}
    for kind, body in _INLINE.findall(page):
        digest = base64.b64encode(hashlib.sha256(body).digest()).decode()
        hashes[kind].append(f"'sha256-{digest}'")
    return "; ".join(
        (
            "default-src 'none'",
            " ".join(["script-src 'self'", *hashes[b"script"]]),
            " ".join(["style-src", *hashes[b"style"]]) if hashes[b"style"] else "style-src 'none'",
            "connect-src 'self'",
            "img-src 'self'",
            "base-uri 'none'",
            "form-action 'none'",
            "frame-ancestors 'none'",
        )
    )
