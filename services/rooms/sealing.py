"""Line credentials at rest: AES-256-GCM, bound to the person and transport they belong
to, so a sealed secret copied onto another person's line does not open."""

import os
import secrets
from collections.abc import Mapping

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from libs.runtime.settings import BadSetting, key_from_env

__all__ = ["Sealer", "sealer_from_env"]

_NONCE = 12


class Sealer:
    def __init__(self, key: bytes) -> None:
        if len(key) != 32:
            raise ValueError("the lines key must be 32 bytes (64 hex digits)")
        self._aead = AESGCM(key)

    @classmethod
    def from_hex(cls, key: str) -> "Sealer":
        return cls(bytes.fromhex(key.strip()))

    def seal(self, secret: str, *, owner: str, transport: str) -> bytes:
        nonce = secrets.token_bytes(_NONCE)
        return nonce + self._aead.encrypt(nonce, secret.encode(), _bound(owner, transport))

    def open(self, sealed: bytes, *, owner: str, transport: str) -> str:
        try:
            plain = self._aead.decrypt(sealed[:_NONCE], sealed[_NONCE:], _bound(owner, transport))
        except InvalidTag as exc:
            raise ValueError("the sealed credential does not open for this line") from exc
        return plain.decode()


def _bound(owner: str, transport: str) -> bytes:
    return f"{owner}\0{transport}".encode()


def sealer_from_env(env: Mapping[str, str] | None = None) -> Sealer:
    """The Sealer of TETHER_LINES_KEY (hex), else of the file TETHER_LINES_KEY_FILE or
    $TETHER_HOME/lines.key; a key missing or malformed is a BadSetting saying which."""
    where, key = key_from_env(os.environ if env is None else env, "TETHER_LINES_KEY", "lines.key")
    try:
        return Sealer.from_hex(key)
    except ValueError as exc:
        raise BadSetting(f"the lines key in {where}: {exc}") from None
