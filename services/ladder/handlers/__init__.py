"""One handler per `tether.ladder.*` subject, the window's end, and answers to confirmations.

Every write is the person's own: the key is their user id, and an agent (a token with
`act`) is refused on every route of the ladder, each attempt audited. Lowering cancels
every window it affects before it answers; a window's end reads the level again.
"""

from collections.abc import Mapping

from libs.contracts import ladder
from libs.contracts.registry import Subject
from libs.runtime.service import Handler
from services.ladder.handlers.common import WINDOW_END
from services.ladder.handlers.confirmations import Confirmations
from services.ladder.handlers.settings import Settings
from services.ladder.handlers.windows import Windows

__all__ = ["WINDOW_END", "Handlers"]


class Handlers(Settings, Windows, Confirmations):
    def table(self) -> Mapping[Subject, Handler]:
        return {
            ladder.GET: self.get,
            ladder.CHANGE: self.change,
            ladder.WINDOW: self.window,
            ladder.CEILING: self.ceiling,
            ladder.WINDOWS: self.windows,
            ladder.EDIT: self.edit,
            ladder.REPLACE: self.replace,
            ladder.STOP: self.stop,
            ladder.CONFIRMATIONS: self.confirmations,
            ladder.CONFIRM: self.confirm,
            ladder.DECIDE: self.decide,
            ladder.ROUTE: self.route,
            ladder.LEVEL: self.level_of,
            ladder.APPLIES: self.applies,
        }
