"""The rooms service's own configuration, beside every service's (libs.runtime.settings)."""

import os
from collections.abc import Mapping

import msgspec

from libs.runtime.settings import Positive, converted
from services.rooms.domain.calls import SPEAK_WITHIN_S

__all__ = ["RoomsSettings"]


class RoomsSettings(msgspec.Struct, frozen=True, kw_only=True):
    """
    | variable            | default | meaning                                                 |
    |---------------------|---------|---------------------------------------------------------|
    | TETHER_SPEAK_WITHIN | 3       | seconds a ringing call waits for the agent's reply, then |
    |                     |         | rings the forwarding number or takes a voicemail; keep  |
    |                     |         | it under the gateway's TETHER_REQUEST_TIMEOUT           |
    """

    speak_within: Positive = SPEAK_WITHIN_S

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "RoomsSettings":
        env = os.environ if env is None else env
        return converted(cls, {f: env[v] for v, f in _ENV.items() if env.get(v)}, _ENV)


_ENV = {"TETHER_SPEAK_WITHIN": "speak_within"}
