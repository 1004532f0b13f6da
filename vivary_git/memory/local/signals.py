"""What a note's frontmatter and name say beyond its words: nudges to hybrid recall's fused ranking.

Three signals, each generic (nothing here knows one dataset's fields), each measured on its own on LoCoMo
and SciFact (docs/memory.md, "Conversational memory"):

* a field value the query names (`named`): a string value of a note's frontmatter written as a name or an
  id (`speaker: Caroline`, `project: Apollo`, a tag `INC-42`; not a reference to another note, not a value
  all in lower case such as `status: approved` or a tag `hook`) whose words occur, in order and whole, in
  the query. A note holding a value the query names gains a share of the best fused score; a value every
  candidate holds changes nothing. The signals never lift a note past the one first in both the keyword
  and the vector list (recall.py).
* a date the query names (`dated`): a frontmatter date (`date: 2023-05-08`, YAML's date or an ISO string)
  in a month or year the query names ("in May 2023", "last June", "in 2022").
* a sequence (`neighbours`): notes the workspace says follow one another: in the same folder, with names
  that differ only by a final number after a word (`chapter-1`, `chapter-2`; `call-D3-12`, `call-D3-13`),
  or linked by a `next`/`prev`/`previous` field. A note next to a strong hit gains a share of its score,
  so the turn before an answer is found with it. Bare numbers (`4983.md`) and dates (`2023-05-08.md`) are
  not a sequence: neighbouring numbers there say nothing about content.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vivary_git.textsearch import fold, words

__all__ = ["MONTHS", "Signals", "month_years"]

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")
# A month named in full; "May" only capitalised ("may" is mostly the verb).
_MONTH = re.compile(r"\b(?:(?i:" + "|".join(m for m in MONTHS if m != "may") + r")|May)\b")
_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_ISO_DAY = re.compile(r"^(\d{4})-(\d{2})-(\d{2})")
# The name of a note in a sequence: a word, a separator, then the number that orders it.
_SEQUENCE = re.compile(r"^(.*[^\W\d_].*[-_ .])(\d+)$")
SEQUENCE_FIELDS = frozenset({"next", "prev", "previous"})
MAX_VALUE_WORDS = 4
MAX_VALUE_CHARS = 64
# Words a value made of only these does not count: "it", "on", "done" are not names.
_WEAK = frozenset("""
a about after all also an and any are as at be been but by can did do does done for from had has have he her him
his how i if in into is it its just me my no not of off on or our out she so than that the their them then there
they this to too up us was we were what when where which who why will with yes you your
""".split())  # noqa: SIM905


def _a_name(text: str) -> bool:
    """Whether a value is written as a name or an id: with a capital letter or a digit (`Caroline`, `Apollo`,
    `INC-42`), or in a script without case. A value all in lower case (`approved`, `hook`, `review`) is the
    vault's vocabulary (a status, a tag, a kind); a query using the word uses a word, it names nothing."""
    return not text.islower() or any(c.isdigit() for c in text)


def month_years(query: str) -> set[tuple[int | None, int | None]]:
    """(month, year) pairs a query names: 'May 2023' -> {(5, 2023)}; 'in 2022' -> {(None, 2022)}; 'in June'
    -> {(6, None)}. Months are English names in full."""
    years = [int(y) for y in _YEAR.findall(query)]
    months = [MONTHS.index(m.lower()) + 1 for m in _MONTH.findall(query)]
    if not months:
        return {(None, y) for y in years}
    if not years:
        return {(m, None) for m in months}
    return {(m, y) for m in months for y in years}


def _day(value: Any) -> dt.date | None:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        m = _ISO_DAY.match(value)
        if m is not None:
            try:
                return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            except ValueError:
                return None
    return None


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, str):
                yield v


class Signals:
    """The signals of one snapshot's notes, numbered as the index numbers them (document = position)."""

    def __init__(self, paths: Sequence[str], ids: Sequence[str], fields: Sequence[Mapping[str, Any]],
                 links: Iterable[tuple[str, str, str]] = ()) -> None:
        """`paths`, `ids` and `fields` of each document; `links`: (source id, field, target id) edges. A field
        that links its note to others (a reference) holds no value of the note's own: it names other notes."""
        links = list(links)
        linking = {(source, field) for source, field, _ in links}
        self._values: dict[str, list[tuple[tuple[str, ...], int]]] = {}  # first word -> (words, value number)
        self._holders: list[tuple[str, list[int]]] = []  # value number -> (its field, the documents holding it)
        self._dates: dict[int, list[dt.date]] = {}
        numbered: dict[tuple[str, ...], int] = {}
        for doc, fm in enumerate(fields):
            for key, value in fm.items():
                if (ids[doc], key) in linking:
                    continue
                day = _day(value)
                if day is not None:
                    self._dates.setdefault(doc, []).append(day)
                    continue
                for text in _strings(value):
                    if len(text) > MAX_VALUE_CHARS or not _a_name(text):
                        continue
                    got = tuple(words(fold(text)))
                    if not got or len(got) > MAX_VALUE_WORDS or all(w in _WEAK or w.isdigit() for w in got):
                        continue
                    number = numbered.get((key, *got))
                    if number is None:
                        number = numbered[(key, *got)] = len(self._holders)
                        self._holders.append((key, []))
                        self._values.setdefault(got[0], []).append((got, number))
                    holders = self._holders[number][1]
                    if not holders or holders[-1] != doc:
                        holders.append(doc)
        self._next: dict[int, set[int]] = {}
        by_name: dict[tuple[str, str, int], int] = {}
        for doc, path in enumerate(paths):
            folder, _, name = path.rpartition("/")
            stem = name.rsplit(".", 1)[0] if "." in name else name
            m = _SEQUENCE.match(stem)
            if m is not None:
                by_name[(folder, m.group(1), int(m.group(2)))] = doc
        for (folder, prefix, number), doc in by_name.items():
            after = by_name.get((folder, prefix, number + 1))
            if after is not None:
                self._link(doc, after)
        doc_of = {nid: i for i, nid in enumerate(ids)}
        for source, field, target in links:
            if field.lower() in SEQUENCE_FIELDS:
                a, b = doc_of.get(source), doc_of.get(target)
                if a is not None and b is not None and a != b:
                    self._link(a, b)

    def _link(self, a: int, b: int) -> None:
        self._next.setdefault(a, set()).add(b)
        self._next.setdefault(b, set()).add(a)

    def named(self, query: str) -> list[tuple[str, frozenset[int]]]:
        """For each field value the query names (its words in order, whole): the field, and the documents
        holding that value in it."""
        asked = words(fold(query))
        out: dict[int, tuple[str, frozenset[int]]] = {}
        for i, w in enumerate(asked):
            for got, number in self._values.get(w, ()):
                if number not in out and tuple(asked[i:i + len(got)]) == got:
                    field, holders = self._holders[number]
                    out[number] = (field, frozenset(holders))
        return list(out.values())

    def dated(self, query: str) -> set[int]:
        """The documents with a frontmatter date in a month or year the query names."""
        want = month_years(query)
        if not want or not self._dates:
            return set()
        return {doc for doc, days in self._dates.items()
                if any((m is None or m == d.month) and (y is None or y == d.year) for d in days for m, y in want)}

    def neighbours(self, doc: int) -> set[int]:
        """The documents just before and after `doc` in a sequence."""
        return self._next.get(doc, set())

    @property
    def has_sequences(self) -> bool:
        return bool(self._next)
