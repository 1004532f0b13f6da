"""Durability tiers: how long a memory should matter, read from its frontmatter (docs/dream.md).

- `working` (the default, and what an unknown value reads as): in use now; dream may compact it.
- `durable`: worth keeping across sessions; in the MEMORY.md digest; dream may still compact it (the
  super node that replaces it is durable, so the knowledge stays in the digest).
- `pinned`: always in the digest, first; dream never compacts, archives or removes it.
- `ephemeral`: matters until `expires` (an ISO date or date-time, UTC when no zone is given; without
  one, 7 days after `observed_at`); past that it drops out of search and recall, and the next dream
  run removes it (one commit).

`archived: DATE-TIME` marks a memory that a dream resolution compacted into a super node (the super node
lists it in `compacts`). Archived memories are left out of search and recall unless asked for
(`include_archived`), never enter the digest and are never compacted again; the note and its history
stay, so `git revert` of the dream commit brings it back.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from vivary_git.config import DURABILITY

__all__ = ["ANCHOR_KINDS", "ARCHIVED", "COMPACTS", "EPHEMERAL_DAYS", "EXPIRES", "KIND", "SUPER_NODE", "expires_at",
           "hidden", "is_archived", "now", "parse_when", "stamp", "tier"]

ARCHIVED = "archived"
EXPIRES = "expires"
KIND = "kind"
SUPER_NODE = "super_node"
# Source anchors (memory/sources/anchors.py): memories of a file, page or folder, kept current by `refresh`; a
# dream never compacts them (their text is the source's, not a memory to summarise).
ANCHOR_KINDS = frozenset(("source_document", "source_collection"))
COMPACTS = "compacts"
EPHEMERAL_DAYS = 7


def now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def stamp(when: dt.datetime) -> str:
    return when.astimezone(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def parse_when(value: Any) -> dt.datetime | None:
    """An ISO date or date-time (a YAML date object too) as an aware UTC date-time; None when it is not one."""
    if isinstance(value, dt.datetime):
        got = value
    elif isinstance(value, dt.date):
        got = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str) and 10 <= len(value.strip()) <= 40:
        text = value.strip()
        try:
            got = dt.datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "Zz" else text)
        except ValueError:
            return None
    else:
        return None
    return got.replace(tzinfo=dt.UTC) if got.tzinfo is None else got.astimezone(dt.UTC)


def tier(fields: Mapping[str, Any]) -> str:
    value = fields.get("durability")
    return value if isinstance(value, str) and value in DURABILITY else "working"


def expires_at(fields: Mapping[str, Any]) -> dt.datetime | None:
    """When an ephemeral memory stops mattering (None for every other tier, or when it cannot be told)."""
    if tier(fields) != "ephemeral":
        return None
    got = parse_when(fields.get(EXPIRES))
    if got is not None:
        return got
    seen = parse_when(fields.get("observed_at"))
    return seen + dt.timedelta(days=EPHEMERAL_DAYS) if seen is not None else None


def is_archived(fields: Mapping[str, Any]) -> bool:
    value = fields.get(ARCHIVED)
    return value is not None and value is not False and value != ""


def hidden(fields: Mapping[str, Any], when: dt.datetime) -> str | None:
    """Why a memory is left out of search and recall at `when` ("archived", "expired"), or None."""
    if is_archived(fields):
        return "archived"
    end = expires_at(fields)
    if end is not None and end <= when:
        return "expired"
    return None
