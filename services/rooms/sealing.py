"""Line credentials at rest: AES-256-GCM, bound to the person and transport they belong
to, so a sealed secret copied onto another person's line does not open."""

import os
import secrets

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

__all__ = ["Sealer", "key_from_env"]

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


def key_from_env(env: dict[str, str] | None = None) -> str:
    """TETHER_LINES_KEY (hex), else the file TETHER_LINES_KEY_FILE or $TETHER_HOME/lines.key."""
    env = dict(os.environ) if env is None else env
    if env.get("TETHER_LINES_KEY"):
        return env["TETHER_LINES_KEY"]
    path = env.get("TETHER_LINES_KEY_FILE") or os.path.join(
        env.get("TETHER_HOME", ".tether"), "lines.key"
    )
    with open(path) as f:
        return f.read().strip()
