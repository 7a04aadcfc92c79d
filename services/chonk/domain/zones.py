"""A tenant's time zone, by its IANA name."""

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = ["zone"]


def zone(name: str) -> ZoneInfo:
    """The zone named `name`; one that is no zone is refused, naming it."""
    try:
        return ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError) as exc:
        raise ValueError(f"no time zone {name!r}") from exc
