"""One handler per `tether.mod.*` subject, and the drafts' timers.

The org is the verified principal's and the person its subject: nothing in a request
names either, so no route reaches another org's layer or another person's (§9.7).
"""

from collections.abc import Mapping
from typing import Any

import msgspec

from libs.contracts import mod
from libs.contracts.principal import Principal
from libs.contracts.registry import Subject
from libs.runtime.service import Handler
from services.mod.handlers.drafts import Drafts
from services.mod.handlers.installs import Installs
from services.mod.handlers.layers import Layers

__all__ = ["Handlers"]


class Handlers(Installs, Layers, Drafts):
    def table(self) -> Mapping[Subject, Handler]:
        handlers: dict[Subject, Handler] = {
            mod.INSTALL: self.install,
            mod.INSTALLS: self.installs,
            mod.UNINSTALL: self.uninstall,
            mod.SURFACE: self.surface,
            mod.LAYER: self.layer,
            mod.WRITE: self.write,
            mod.VERSIONS: self.versions,
            mod.REVERT: self.revert,
            mod.DRAFTS: self.drafts,
            mod.DRAFT: self.draft,
            mod.KEEP: self.keep,
            mod.DISCARD: self.discard,
            mod.COMPOSED: self.composed,
            mod.ORG_COMPOSED: self.org_composed,
            mod.DRAFT_COMPOSED: self.draft_composed,
        }
        return {subject: _reading(handler) for subject, handler in handlers.items()}


def _reading(handler: Handler) -> Handler:
    """`handler`, for a caller who may read the mod plane at all."""

    async def read(req: Any, p: Principal) -> msgspec.Struct:
        mod.require_read(p)
        return await handler(req, p)

    return read
