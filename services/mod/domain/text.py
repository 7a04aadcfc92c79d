"""Plain text (§9.2 rule 2): drawn as text, so it may hold no control character."""

import unicodedata

__all__ = ["plain", "title_fault"]

_CONTROL = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")


def plain(text: str, *, newlines: bool = False) -> bool:
    # A printable string holds none of these categories, and is told in one C pass;
    # only one with something unprintable (a newline, a no-break space) is read by category.
    return text.isprintable() or not any(
        unicodedata.category(c) in _CONTROL and not (newlines and c == "\n") for c in text
    )


def title_fault(title: str) -> str | None:
    """Why `title` is no title: 1 to 40 characters of plain text (§9.2 rule 1)."""
    if not 1 <= len(title) <= 40 or not title.strip():
        return f"a title is 1 to 40 characters, not {len(title)}"
    if not plain(title):
        return "a title is plain text, with no control characters"
    return None
