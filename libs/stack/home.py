"""The state directory ($TETHER_HOME, default ./.tether) and the secrets kept in it."""

import json
import os
import secrets
from collections.abc import Iterable
from pathlib import Path

__all__ = ["Home", "NotMade"]


class NotMade(Exception):
    """The state directory cannot be made, or what a command reads from it is not there
    (made afresh, it would match nothing running: a token no gateway takes, a password the
    bus refuses)."""


class Home:
    """Layout: nats/ (JetStream store and config), redis/, jwt.key, lines.key (seals
    personal lines' credentials), credentials.json."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root or os.environ.get("TETHER_HOME", ".tether")).resolve()
        self.nats_dir = self.root / "nats"
        self.redis_dir = self.root / "redis"
        self.jwt_key_file = self.root / "jwt.key"
        self.lines_key_file = self.root / "lines.key"
        self.credentials_file = self.root / "credentials.json"

    def ensure(self, roles: Iterable[str]) -> dict[str, str]:
        """Create what is missing; return the NATS password of every role."""
        try:
            return self._ensure(roles)
        except OSError as exc:
            why = f"cannot make {exc.filename or self.root}: {exc.strerror}"
            raise NotMade(f"{why} (TETHER_HOME={self.root})") from None

    def _ensure(self, roles: Iterable[str]) -> dict[str, str]:
        for d in (self.root, self.nats_dir, self.redis_dir):
            d.mkdir(parents=True, exist_ok=True)
        for key_file in (self.jwt_key_file, self.lines_key_file):
            # One left empty (a write cut short, before they were whole) signed and sealed
            # nothing: a new one replaces it.
            if not key_file.exists() or not key_file.read_text().strip():
                _write_secret(key_file, secrets.token_hex(32))
        known = self._known() if self.credentials_file.exists() else {}
        wanted = {role: known.get(role) or secrets.token_urlsafe(24) for role in roles}
        if wanted != known:
            _write_secret(self.credentials_file, json.dumps(known | wanted, indent=2))
        return wanted

    def password(self, role: str) -> str:
        """The NATS password `ensure` made for `role`."""
        known = self._known()
        if role not in known:
            raise NotMade(f"{self.credentials_file} holds no password for {role}{self._made}")
        return known[role]

    def jwt_key(self) -> str:
        if not (key := self._read(self.jwt_key_file).strip()):
            raise NotMade(f"{self.jwt_key_file} is empty{self._made}")
        return key

    def _known(self) -> dict[str, str]:
        try:
            return json.loads(self._read(self.credentials_file))
        except ValueError as exc:
            raise NotMade(f"{self.credentials_file} is not JSON ({exc}){self._made}") from None

    def _read(self, path: Path) -> str:
        try:
            return path.read_text()
        except OSError as exc:
            raise NotMade(f"cannot read {path}: {exc.strerror}{self._made}") from None

    @property
    def _made(self) -> str:
        return f" (TETHER_HOME={self.root}, which `tether up` makes)"


def _write_secret(path: Path, text: str) -> None:
    """Whole or not at all: a `tether up` stopped as it wrote left an empty key or
    credentials file, which every later start stumbled on."""
    part = path.with_name(f"{path.name}.part")
    fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(part, path)
