"""What a memory claims, as far as telling two claims apart needs: its content words, and the values a
contradiction changes (a negation, a number, a day or month, a colour, a name, a quantifier, a word put in
another's place).

`Claim.of(text)` reads a text once; `overlap(a, b)` is how many of the shorter one's content words the other
has; `mismatches(a, b)` lists what one says that the other says otherwise, as evidence such as `number: 600 ->
1200` or `negation: "not" only in the new text`. Two texts that name different values for the same slot say
different things; one that only leaves a value out (a paraphrase) does not, so a value counts only when each
text has one the other lacks.

Numbers are read however written ("25", "twenty-five", "two hundred and fifty", "25%" and "25 per cent", "14th" and
"fourteenth"), durations in minutes ("48 hours" is "two days"), and a count, a duration, a rank and a day of a month
("28 April", "the 14th of November") are never one slot; "twice a day" is two times. A count is read with what it counts
too, so another number of the same thing shows though the old number is still said of something else ("twice a day, two
puffs" / "three times a day, two puffs"), and a quantifier with what it is said of ("most of the plants" / "few of the
plants; most of them are ferns"). "Rather than" and "forbidden" deny as "not" does, within their clause: a text denies
when one of its clauses holds an odd count of negations, so two clauses that each deny do not cancel ("Mira isn't on the
lease, so she can't sign"), and "unless" in a clause that denies says what is needed ("can't publish unless Python is
installed" denies nothing), as "until" does ("no article goes live until it is reviewed"). A denial counts only between
two texts that say mostly the same words (or where the sentence that denies does: "isn't allergic to penicillin; the
rash turned out to be viral"), and so does a denial that moved ("is not backed up, because it can be recreated" / "is
backed up, because it can't be recreated": each denies words the other says). What "rather than" turns down is denied
however much else is reworded ("in sync, rather than importing once" / "a one-time import"). "Used to" says what is no
longer, as "any more" at the end of a clause does ("doesn't go on Sundays any more"), and so does "was switched off"
("was replaced", "has been shut down"); what need not be done is optional and what has to be done required, and those
two senses, "on" and "off", "public" and "private", "short" and "long" and a few more (`_SENSES`) are opposed wherever
they stand, unless a negation turns one of them around ("not required"; a negation of something else, "with no sugar",
leaves them). "Never" is how often, as "sometimes" is. A comparison is read as its two sides ("more slowly than" as
"slower than", "isn't as good as" as "worse than", no denial), and so is an order ("X after Y" is X later than Y,
"before" and "ahead of" earlier): the same sides with the opposite comparative, or the sides turned around with the same
one, is another claim ("Berlin ships more than Poznań" / "Poznań ships more than Berlin"), when both measure the same
thing (a time is longer or later, shorter or faster). A value named verbatim (a `code` span, a #channel, a path) that
each text has and the other does not is another value, between texts that say mostly the same words. A sentence's first
word is a name only when it looks like one ("GitHub", "Visual Studio"); "May" is the month inside a sentence or beside a
date's words.

Beyond the closed classes (negations, numbers, days and months, quantifiers), any content word can be the
changed value: two texts whose content words line up but for one or two short spans put in each other's place
("the banner is orange" / "the banner is purple", "faster than" / "slower than", "save money" / "cost money")
make two claims about one slot, unless the swapped spans mean the same (`same_sense`, the probe's embedding of
the two spans; without it only the same stem). Words of opposite sense (`_SWAP_OPPOSITES`: "on" / "off",
"faster" / "slower", "local" / "remote"; and Princeton WordNet 3.0's direct antonyms of adjectives, data/antonyms.txt,
in every regular inflection) are a changed claim whatever their embedding, which puts them close ("lowercase" /
"uppercase" 0.90); only as a swap, since a comparison turned around ("Y is slower than X") says the same. WordNet's
antonyms count wherever they stand too, as `_ANTONYMS` do ("is furnished" / "is let unfurnished"), but for small
words, quantifiers, negations and comparatives. A span only added or
left out is a paraphrase's liberty, not a swap. Plain Python, no model: the probe (probe.py) combines it with
cosine similarity when the embedder is there, and stands on it alone when it is not.
"""

from __future__ import annotations

import functools
import importlib.resources
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher

__all__ = ["Claim", "mismatches", "overlap"]

_TOKEN = re.compile(r"\d+(?:[.,:]\d+)*(?:%|(?:st|nd|rd|th|am|pm)\b)?|[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)
_STOP = frozenset([
    "a", "an", "the", "and", "or", "but", "if", "then", "so", "of", "to", "in", "on", "at", "by", "for", "with",
    "from", "into", "onto", "over", "under", "about", "as", "is", "are", "was", "were", "be", "been", "being", "am",
    "do", "does", "did", "has", "have", "had", "having", "it", "its", "it's", "this", "that", "these", "those",
    "there", "here", "we", "our", "us", "you", "your", "i", "me", "my", "he", "him", "his", "she", "her", "they",
    "them", "their", "who", "whom", "which", "what", "when", "where", "why", "how", "all", "any", "each", "every",
    "both", "either", "some", "such", "own", "same", "other", "another", "than", "too", "very", "can", "could",
    "may", "might", "must", "shall", "should", "will", "would", "just", "also", "only", "still", "now", "currently",
    "at", "up", "down", "out", "off", "again", "once", "per", "a", "via", "each", "whose", "whichever", "yet", "ever"
])
# Words that turn a claim around. "no longer", "stopped" and "anymore" say that what was true is not now.
_NEGATIONS = frozenset([
    "not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "cannot", "can't", "won't", "don't",
    "doesn't", "didn't", "isn't", "aren't", "wasn't", "weren't", "hasn't", "haven't", "hadn't", "shouldn't",
    "wouldn't", "couldn't", "mustn't", "without", "nolonger", "anymore", "stopped", "ceased", "forbidden",
    "prohibited", "banned", "disallowed", "rathernot"
])
_ANTONYMS = (("always", "never"), ("enabled", "disabled"), ("enable", "disable"), ("allowed", "forbidden"),
             ("allow", "forbid"), ("required", "optional"), ("include", "exclude"),
             ("start", "stop"), ("open", "closed"), ("stay", "leave"), ("public", "private"),
             ("increase", "decrease"), ("minimum", "maximum"), ("true", "false"),
             ("accept", "reject"), ("add", "remove"),
             ("must", "may"))
# How much of a set a claim speaks of: a closed class, so a list. Two texts each with a quantifier, none in
# common, say different things ("all talks" / "only some talks"); "only" restricts ("only outgoing links",
# where the other said "both").
_QUANTIFIERS = {w: q for q, ws in (("all", ("all", "every", "each", "both", "always", "everyone", "everything",
                                             "whole", "entire")),
                                    ("most", ("most", "mostly", "usually", "often", "many", "majority")),
                                    ("some", ("some", "several", "sometimes", "occasionally", "only")),
                                    ("few", ("few", "rarely", "seldom", "minority", "handful")))
                for w in ws}
# Words of opposite sense that count only as a swap, one in the other's place with the rest of the sentence the
# same: small words ("turned on" / "turned off") and comparatives, which a comparison turned around keeps ("X is
# faster than Y" / "Y is slower than X" says the same). An embedding puts them close ("faster" / "slower" 0.88),
# so the embedding is not asked.
_SWAP_OPPOSITES = (
    *_ANTONYMS,
    ("on", "off"), ("up", "down"), ("in", "out"), ("inside", "outside"), ("over", "under"), ("above", "below"),
    ("before", "after"), ("with", "without"), ("more", "less"), ("more", "fewer"), ("earlier", "later"),
    ("most", "least"), ("first", "last"),
    ("faster", "slower"), ("quicker", "slower"), ("bigger", "smaller"), ("larger", "smaller"),
    ("higher", "lower"), ("greater", "lower"), ("longer", "shorter"), ("older", "newer"), ("better", "worse"),
    ("cheaper", "costlier"), ("heavier", "lighter"), ("warmer", "colder"), ("hotter", "colder"),
    ("stronger", "weaker"), ("easier", "harder"), ("sooner", "later"), ("fastest", "slowest"),
    ("largest", "smallest"), ("biggest", "smallest"), ("highest", "lowest"), ("oldest", "newest"),
    ("grow", "shrink"), ("rise", "fall"), ("raise", "lower"), ("gain", "lose"), ("win", "lose"),
    ("pass", "fail"), ("succeed", "fail"), ("success", "failure"), ("often", "rarely"), ("often", "seldom"),
    ("usually", "rarely"), ("frequently", "rarely"), ("internal", "external"), ("inbound", "outbound"),
    ("upper", "lower"), ("online", "offline"), ("local", "remote"), ("synchronous", "asynchronous"),
    ("sync", "async"), ("mandatory", "optional"), ("deprecated", "supported"), ("valid", "invalid"),
    ("visible", "hidden"), ("show", "hide"), ("active", "inactive"), ("available", "unavailable"),
    ("possible", "impossible"), ("safe", "unsafe"), ("secure", "insecure"), ("lock", "unlock"),
    ("locked", "unlocked"), ("allow", "deny"), ("allowed", "denied"), ("approve", "reject"),
    ("approved", "rejected"), ("accepted", "rejected"), ("install", "uninstall"), ("include", "omit"),
    ("open", "close"), ("opened", "closed"), ("empty", "full"), ("light", "dark"), ("cheap", "expensive"),
    ("easy", "hard"), ("fast", "slow"), ("high", "low"), ("long", "short"), ("big", "small"),
    ("large", "small"), ("old", "new"), ("good", "bad"), ("hot", "cold"), ("warm", "cool"), ("wet", "dry"),
    ("north", "south"), ("east", "west"), ("left", "right"), ("top", "bottom"), ("front", "back"),
    ("morning", "evening"), ("day", "night"), ("weekday", "weekend"), ("daily", "weekly"), ("weekly", "monthly"),
    ("monthly", "yearly"), ("monthly", "annually"), ("manual", "automatic"), ("manually", "automatically"),
)
_SWAP_OPPOSED = frozenset(pair for a, b in _SWAP_OPPOSITES for pair in ((a, b), (b, a)))
_SWAP_WORDS = 400  # words at most in a text read for swaps
_SWAP_SPAN = 3  # words at most on each side of one swapped span
_SWAP_SPANS = 2  # swapped spans at most
_SWAP_REST = 0.6  # the share of the longer text's words that must line up outside the swapped spans
_CHANGES = frozenset({"nolonger", "anymore", "stopped", "ceased"})  # what was true is not now, whatever else is denied
_OPPOSITE = {w: o for a, b in _ANTONYMS for w, o in ((a, b), (b, a))}
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
           "november", "december")
_WHEN = frozenset(_DAYS + tuple(d + "s" for d in _DAYS) + _MONTHS) - {"may"}  # "may" is mostly the verb
# ... but the month where it is written "May" inside a sentence, or next to a number or a word that dates
_MAY_BEFORE = frozenset({"is", "was", "will", "has", "had", "and", "or", "to", "through", "until", "till"})
_MAY_AFTER = frozenset({"in", "for", "by", "until", "till", "since", "before", "after", "of", "early", "late", "mid",
                        "end", "during", "from", "through", "last", "next", "this", "every"})
_UNITS = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_ORDINALS = [
    "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth", "eleventh",
    "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth",
    "twentieth"
]
_TENTHS = {t[:-1] + "ieth": str(20 + 10 * i) for i, t in enumerate(_TENS)} | {"hundredth": "100"}  # "fortieth"
_ORDINAL_WORDS = frozenset(_ORDINALS) | frozenset(_TENTHS)

_NUMBER_WORDS = {w: str(i) for i, w in enumerate(_UNITS)} | {w: str(20 + 10 * i) for i, w in enumerate(_TENS)} \
    | {w: str(i + 1) for i, w in enumerate(_ORDINALS)} | {"hundred": "100", "thousand": "1000", "dozen": "12",
                                                         "half": "0.5", "twice": "2", "once": "1"} \
    | _TENTHS
_NOT_NUMBERS = frozenset({"second", "once", "half"})  # "a second", "at once": words first
# "one" is a number ("one approval"), but not in "one of", "the one", "no one", "at once"
_NOT_ONE_AFTER = frozenset({"the", "no", "any", "each", "every", "some", "this", "that", "which", "someone"})
_NOT_ONE_BEFORE = frozenset({"of", "another", "by", "or"})
# "no later than two days" bounds a number, it denies nothing; "no longer" is one negation, not two.
# "Twice a day" counts times as "two times a day" does; "once the build passes" counts nothing.
_TIMES = re.compile(r"\b(once|twice|thrice)(?=\s+(?:a|an|per|every|each|daily|weekly|monthly|yearly|annually)\b)", re.I)
_TIMES_SAID = {"once": "1 times", "twice": "2 times", "thrice": "3 times"}
_NOT_NEGATED = re.compile(r"\b(?:no|not) (?:later|earlier|more|less|fewer|sooner) than\b|\bnot only\b", re.I)
_NO_LONGER = re.compile(r"\b(?:no|not any) longer\b|\bnot anymore\b", re.I)
# "Any more" at the end of a clause is "anymore" ("doesn't go on Sundays any more"), not "any more than" or "any
# more questions".
_ANY_MORE = re.compile(r"\bany more\b(?=\s*(?:[.,;:!?)\u2013\u2014]|\s-\s|$))", re.I)
# What was replaced, switched off or shut down is no longer: "the nightly export was switched off in May".
_REPLACED = re.compile(r"\b(?:was|were|has been|have been|had been|got|gets|is being|are being) (?:replaced|"
                       r"switched off|turned off|shut down|discontinued|decommissioned)\b", re.I)
# What a text names verbatim: a `code` span, a #channel, an e-mail address, a path with a folder or a file's
# extension.
_MARKS = re.compile(r"`([^`\n]{1,200})`|(?<![\w#])(#[\w][\w.-]*)|(?<![\w.+-])([\w.+-]+@[\w-]+(?:\.[\w-]+)+)|"
                    r"(?<![\w/.])((?:[\w.-]+/)+[\w.-]*|[\w-]+\.[a-z]{1,5})(?![\w/])")
# "used to onboard" (what was done, and is not now), but not "is used to sign in" (what a thing serves for).
_USED_TO = re.compile(r"(?<!\bis )(?<!\bare )(?<!\bwas )(?<!\bwere )(?<!\bbe )(?<!\bbeen )(?<!\bbeing )"
                      r"(?<!\bget )(?<!\bgets )(?<!\bgot )\bused to\b(?= [a-z])", re.I)
# What need not be done is optional: "don't have to go" is "going is optional", "is not required" "is optional".
_NEEDLESS = re.compile(r"\b(?:(?:do|does|did)(?: not|n't)|need not|needn't) (?:have|need) to\b|\bneed not\b|"
                       r"\bneedn't\b|\b(?:is|are|was|were|be)(?: not|n't) (?:required|mandatory|compulsory)\b|"
                       r"\bnot (?:required|mandatory|compulsory)\b", re.I)
_MUST = re.compile(r"\b(?:has|have|had) to\b", re.I)  # "has to be at the top" is "must be"
# "Isn't as good as" is "less good than", a comparison (`_comparative`: "worse than"), not a denial of one.
_NOT_AS = re.compile(r"\b(?:[a-z]+n't|not)\s+(?:quite\s+|nearly\s+|half\s+)?(?:as|so)\s+([a-z]+)\s+as\b", re.I)
# "pnpm rather than npm" is "pnpm, not npm": both turn npm down. A "not" that opens a clause of its own after a comma,
# a dash or a bracket and denies a word or a name there ("Ingrid Solheim, not Matías Olivera, owns it"; "on 17
# October, not the 14th") is that correction too; one that a verb or a clause follows is a denial like any other.
_INSTEAD = re.compile(r"\binstead of\b|\brather than\b|(?<=[,;(\u2013\u2014])\s*not\b(?=\s+(?:the\s+|a\s+|an\s+)?"
                      r"(?:[\w`\"'@#.-]+\s+){0,2}[\w`\"'@#.-]+\s*(?:[,;:.)\u2013\u2014]|$))", re.I)
# A number written in words ("twenty-five", "two hundred and fifty"): read as its digits. A word alone is read
# as it is (`_NUMBER_WORDS`); "one or two", "two three-day sprints" are not one number.
_SPELLED = re.compile(r"\b(?:(?:zero|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|"
                      r"fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|"
                      r"seventy|eighty|ninety|hundred|thousand)(?:[ -]+(?:and[ -]+)?(?=[a-z])|\b)){2,}", re.I)
_A_HUNDRED = re.compile(r"\ba (hundred|thousand)\b", re.I)  # "a hundred and twenty" is 120
_OCLOCK = re.compile(r"\b(\d{1,2}|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve) o'clock"
                     r"(?: in the (morning|afternoon|evening))?", re.I)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")
_YEAR_MONTH = re.compile(r"\b(\d{4})-(\d{1,2})\b(?!-\d)")  # "2022-04" is April 2022
# "3 p.m.": the time, its full stop kept where it also ends the sentence
_DOTTED_TIME = re.compile(r"(?<=\d)\s*([ap])\.m\.(\s+(?=[A-Z])|\s*$)?", re.I)
_DOT_DATE = re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b")
_SLASH_DATE = re.compile(r"\b(\d{1,2})/(\d{1,2})(?:/(\d{4}))?\b")
_PERCENT = re.compile(r"(\d)\s*per ?cent\b", re.I)
_ACRONYM_PLURAL = re.compile(r"\A[A-Z]{2,}s\Z")
_ENDS = (".", "!", "?", ":", ";", "\n")  # what ends a sentence (or a list item's line)
# What starts another clause: a negation denies within its clause, and a text denies when one of its clauses
# has an odd count ("Mira isn't on the lease, so she can't sign" denies, twice; "not without reason" does not).
_CLAUSE_MARKS = re.compile(r"[,;:.!?()\u2013\u2014]|\s-\s")
_CLAUSE_WORDS = frozenset({"so", "because", "but", "while", "whereas", "although", "though", "since", "therefore"})
_OPENERS = " \t\"'([*_`-"  # what may stand between a sentence's end and its next word
_ROOT, _ROOT_ENDING = 5, 3  # a name's root and ending ("Byzanti-um" / "Byzanti-ne"), in letters
# Units of measure, a closed class: each spelled-out name (singular, plural, British and American) is its symbol,
# so "8 kg" and "eight kilos" say the same words.
_UNIT_NAMES = {f"{name}{end}": symbol for symbol, names in (
    ("kg", ("kilo", "kilogram", "kilogramme")), ("g", ("gram", "gramme")), ("mg", ("milligram",)),
    ("km", ("kilometre", "kilometer")), ("m", ("metre", "meter")), ("cm", ("centimetre", "centimeter")),
    ("mm", ("millimetre", "millimeter")), ("l", ("litre", "liter")), ("ml", ("millilitre", "milliliter")),
    ("kb", ("kilobyte",)), ("mb", ("megabyte",)), ("gb", ("gigabyte",)), ("tb", ("terabyte",)),
) for name in names for end in ("", "s")} | {s: s for s in ("kg", "mg", "km", "cm", "mm", "ml", "kb", "mb", "gb",
                                                            "tb")}
_NAME_REST = 0.8  # the share of the other words two claims naming different names must have in common
_DURATIONS = {u + s: m for u, m in (("minute", 1), ("min", 1), ("hour", 60), ("hr", 60), ("day", 1440),
                                       ("week", 10080), ("second", 1 / 60), ("sec", 1 / 60)) for s in ("", "s")}
_TIME = re.compile(r"\A(\d{1,2})(?::(\d{2}))?(am|pm)\Z")
# Words and two-word phrases of a sense with an opposite, read anywhere in a text (`mismatches`' "opposite").
_SENSES = {"must": "required", "require": "required", "requires": "required", "required": "required",
           "mandatory": "required", "compulsory": "required", "optional": "optional", "enabled": "on",
           "turned on": "on", "switched on": "on", "disabled": "off", "turned off": "off", "switched off": "off",
           "public": "public", "private": "private", "ascending": "ascending", "descending": "descending",
           "visible": "visible", "hidden": "hidden", "valid": "valid", "invalid": "invalid", "expired": "invalid",
           "temporary": "temporary", "temporarily": "temporary", "permanent": "permanent",
           "permanently": "permanent", "strong": "strong", "weak": "weak", "high": "high", "low": "low",
           "early": "early", "late": "late", "top": "top", "bottom": "bottom", "fixed": "fixed",
           "variable": "variable", "short": "short", "long": "long", "brief": "short", "concise": "short",
           "lengthy": "long", "detailed": "long"}
_SENSES_WORDS = frozenset(w for k in _SENSES for w in k.split())
_SENSE_OPPOSITE = {w: o for a, b in (("required", "optional"), ("on", "off"), ("public", "private"),
                                     ("ascending", "descending"), ("visible", "hidden"), ("valid", "invalid"),
                                     ("temporary", "permanent"), ("strong", "weak"), ("high", "low"),
                                     ("early", "late"), ("top", "bottom"), ("fixed", "variable"),
                                     ("short", "long"))
                   for w, o in ((a, b), (b, a))}
_COLOURS = frozenset({"red", "blue", "green", "yellow", "orange", "purple", "violet", "pink", "brown", "grey", "gray",
                      "black", "white", "turquoise", "teal", "magenta", "beige", "gold", "silver"})
_DENIES = 3  # words after a negation within which its first run of content words is what it denies
_SIBILANT_ES = ("ses", "xes", "zes", "ches", "shes")
# Comparatives by what they measure, +1 saying more of it and -1 less: two comparisons are told apart only in one
# measure ("costs less than" / "is more expensive than": an amount and a cost, left alone). "Takes longer" is
# later, "faster" sooner: "the tram takes longer than cycling" / "cycling is quicker than the tram" is one claim.
_MORE_LESS = {w: (measure, way) for measure, more, less in (
    ("amount", ("more",), ("less", "fewer")), ("size", ("larger", "bigger", "greater"), ("smaller",)),
    ("height", ("higher", "taller"), ("lower",)),
    ("time", ("longer", "later", "slower"), ("shorter", "earlier", "sooner", "faster", "quicker")),
    ("age", ("older",), ("newer", "younger")), ("weight", ("heavier",), ("lighter",)),
    ("warmth", ("warmer", "hotter"), ("colder", "cooler")), ("strength", ("stronger",), ("weaker",)),
    ("effort", ("harder",), ("easier",)), ("cost", ("costlier", "dearer"), ("cheaper",)),
    ("sound", ("louder",), ("quieter",)), ("width", ("wider",), ("narrower",)), ("depth", ("deeper",), ("shallower",)),
    ("quality", ("better",), ("worse",)), ("distance", ("further", "farther"), ("nearer", "closer")),
) for words, way in ((more, 1), (less, -1)) for w in words}
_IRREGULAR = {"good": "better", "well": "better", "bad": "worse", "far": "further"}  # comparatives not made with -er
# Verbs of preference, whose "over" puts what they name first: "prioritises hierarchical links over edges".
_PREFERS = frozenset({"prioritise", "prioritises", "prioritised", "prioritising", "prioritize", "prioritizes",
                      "prioritized", "prioritizing", "favour", "favours", "favoured", "favouring", "favor", "favors",
                      "favored", "favoring", "prefer", "prefers", "preferred", "preferring", "choose", "chooses",
                      "chose", "choosing"})
# Verbs whose "after" orders nothing: "named after its id", "looks after the twins" (takes care of them; "are
# looked after by" says the same turned around).
_NOT_ORDERS = frozenset({"named", "called", "look", "looks", "looked", "looking"})
_QUANTIFIED_WITHIN = 4  # words after a quantifier within which its first content word is what it is said of
_COMPARED_WITHIN = 4  # words between a comparative and its "than" at most, and content words read after "than"


def _stem(word: str) -> str:
    """A crude English stem: enough that "deploys", "deployed" and "deploying" meet, and "file", "files" and
    "filed" ("-es" goes only after a sibilant, "boxes"; a final "e" goes always, "releasing" is "releas")."""
    for suffix, keep in (("'s", ""), ("ies", "y"), ("ied", "y"), ("sses", "ss"), ("ing", ""), ("ed", ""), ("es", ""),
                         ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss") \
                and (suffix != "es" or word.endswith(_SIBILANT_ES)):
            word = word[: len(word) - len(suffix)] + keep
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def _number(token: str) -> list[str]:
    """The numbers a token says: `2am` and `02:00` are 2, `10:15` is 10 and 15, `99.9%` is 99.9."""
    low = token.lower().rstrip("%")
    got = _TIME.match(low)
    if got:
        hour = int(got.group(1)) % 12 + (12 if got.group(3) == "pm" else 0)
        out = [str(hour)]
        if got.group(2) and got.group(2) != "00":
            out.append(str(int(got.group(2))))
        return out
    if low[:1].isdigit():
        parts = low.replace(",", "").split(":")
        return [p.lstrip("0") or "0" for p in parts if p not in ("00",)]
    word = _NUMBER_WORDS.get(low)
    return [word] if word is not None and low not in _NOT_NUMBERS else []


def _oclock(match: re.Match[str]) -> str:
    hour = match.group(1).lower()
    hour = _NUMBER_WORDS.get(hour, hour)
    part = (match.group(2) or "").lower()
    return f"{hour}pm" if part in ("afternoon", "evening") else f"{hour}am" if part == "morning" else f"{hour}:00"


def _month(n: str) -> str | None:
    return _MONTHS[int(n) - 1] if 1 <= int(n) <= 12 else None


def _dates(text: str) -> str:
    """Dates written in digits as the words that write them out ("31.01.2027" is "31 january 2027"): a day
    and a year are numbers, a month is a date. A `d/m` that could be `m/d` gives both readings."""
    def iso(m: re.Match[str]) -> str:
        month = _month(m.group(2))
        return f"{int(m.group(3))} {month} {m.group(1)}" if month else m.group()

    def dot(m: re.Match[str]) -> str:
        month = _month(m.group(2))
        return f"{int(m.group(1))} {month} {m.group(3)}" if month else m.group()

    def slash(m: re.Match[str]) -> str:
        a, b, year = int(m.group(1)), int(m.group(2)), m.group(3) or ""
        if not 1 <= a <= 31 or not 1 <= b <= 31 or (a > 12 and b > 12):
            return m.group()
        readings = [(a, b)] if b <= 12 < a else [(b, a)] if a <= 12 < b else [(a, b), (b, a)]
        return " ".join(f"{day} {_MONTHS[month - 1]}" for day, month in readings) + (f" {year}" if year else "")

    def year_month(m: re.Match[str]) -> str:
        month = _month(m.group(2))
        return f"{month} {m.group(1)}" if month else m.group()

    return _SLASH_DATE.sub(slash, _DOT_DATE.sub(dot, _YEAR_MONTH.sub(year_month, _ISO_DATE.sub(iso, text))))


def _spelled(match: re.Match[str]) -> str:
    """A number written in words as digits, when the words make one number; else the words as they were."""
    words = [w for w in re.split(r"[ -]+", match.group().lower()) if w and w != "and"]
    total = current = 0
    last = ""  # the kind of the word before: "unit" (0-19), "tens", "hundred", "thousand"
    for w in words:
        n = int(_NUMBER_WORDS[w])
        kind = "hundred" if w == "hundred" else "thousand" if w == "thousand" else "tens" if w in _TENS else "unit"
        fits = {"": {"unit", "tens"}, "unit": {"hundred", "thousand"}, "tens": {"unit", "thousand"},
                "hundred": {"unit", "tens", "thousand"}, "thousand": {"unit", "tens"}}[last]
        if kind not in fits or (last == "tens" and kind == "unit" and not 0 < n < 10):
            return match.group()
        if kind == "hundred":
            current = (current or 1) * 100
        elif kind == "thousand":
            total, current = total + (current or 1) * 1000, 0
        else:
            current += n
        last = kind
    trailing = match.group()[len(match.group().rstrip(" -")):]
    return f"{total + current}{trailing}"


def _in_minutes(number: str, unit: float) -> str:
    try:
        value = float(number) * unit
    except ValueError:
        return number
    return f"{value:g} min"


@dataclass(frozen=True)
class Claim:
    words: frozenset[str]  # content stems
    numbers: frozenset[str]
    when: frozenset[str]  # days and months
    names: dict[str, str]  # stem -> the word as written, for words written with a capital
    negations: tuple[str, ...]
    lows: frozenset[str]  # every word, lowercase
    cased: frozenset[str]  # every word as written
    seq: tuple[str, ...] = ()  # every word in the order written, content words as stems (to line two texts up)
    shown: tuple[str, ...] = ()  # each of `seq` as written, lowercase
    quantity: frozenset[str] = frozenset()  # quantifier classes: all, most, some, few
    kinds: frozenset[tuple[str, str]] = frozenset()  # (number, what it counts: `_kind`) for each of `numbers`
    senses: frozenset[str] = frozenset()  # `_SENSES` the text says
    denied: frozenset[str] = frozenset()  # content words a negation just before turns around ("is not backed up")
    affirmed: frozenset[str] = frozenset()  # content words said without one
    marks: frozenset[str] = frozenset()  # what it names verbatim (`_MARKS`: code, #channel, address, path), lowercase
    said: str = ""  # the text, lowercase
    denials: int = 0  # clauses with an odd count of negations
    counted: frozenset[tuple[str, str]] = frozenset()  # (number, the content word it counts: "puff" in "2 puffs")
    denying: frozenset[str] = frozenset()  # content words of the sentences that deny (`denials`)
    quantified: frozenset[tuple[str, str]] = frozenset()  # (quantifier class, the content word it is said of)
    passed_over: frozenset[str] = frozenset()  # content words "rather than" or "instead of" turns down
    digits: frozenset[str] = frozenset()  # those of `numbers` written in digits ("28", "2,500"), not in words

    @classmethod
    def of(cls, text: str) -> Claim:
        marks = frozenset(m.group(m.lastindex or 0).strip().lower() for m in _MARKS.finditer(text))
        said = text.lower()
        words: set[str] = set()
        numbers: set[str] = set()
        when: set[str] = set()
        names: dict[str, str] = {}
        negations: list[str] = []
        lows: set[str] = set()
        seq: list[str] = []
        shown: list[str] = []
        quantity: set[str] = set()
        kinds: set[tuple[str, str]] = set()
        counted: set[tuple[str, str]] = set()
        quantified: set[tuple[str, str]] = set()
        passed_over: set[str] = set()
        digits: set[str] = set()
        rather = False  # the last negation is "rather than" or "instead of"
        said_of = ("", -1)  # the last quantifier's class and where, till the word it is said of
        text = _DOTTED_TIME.sub(lambda m: f"{m.group(1)}m{'.' if m.group(2) is not None else ''}", text)  # 3pm
        text = re.sub(r"(?<=\d)\s+(am|pm)\b", r"\1", text, flags=re.I)  # "2 pm" is one time
        text = _NOT_AS.sub(r"less \1 than", _NOT_NEGATED.sub(" ", text.replace("’", "'")))
        text = _TIMES.sub(lambda m: _TIMES_SAID[m.group(1).lower()], text)
        text = _INSTEAD.sub(" rathernot ", text)
        text = _MUST.sub(" must ", _NEEDLESS.sub(" optional ", text))
        text = _dates(_OCLOCK.sub(_oclock, text))
        text = _PERCENT.sub(r"\1%", _SPELLED.sub(_spelled, _A_HUNDRED.sub(r"one \1", text)))
        text = _NO_LONGER.sub(" nolonger ", _ANY_MORE.sub("anymore", text))
        text = _REPLACED.sub(" nolonger ", _USED_TO.sub(" nolonger ", text))
        text = text.replace("’", "'")
        found = list(_TOKEN.finditer(text))
        raws = [m.group() for m in found]
        # A sentence's first word is capitalised whatever it is: there only a word with a capital inside it
        # ("iOS", "GitHub") or followed by a capitalised word ("Visual Studio") is taken for a name. Another
        # first word in its place is still a swap (`_swaps`).
        starts = {at for at, m in enumerate(found)
                  if at == 0 or text[found[at - 1].end():m.start()].rstrip(_OPENERS)[-1:] in _ENDS}
        used = -1  # a duration's unit, read with its number
        negated = -1  # where the last negation is
        denied: set[str] = set()
        affirmed: set[str] = set()
        denials = in_clause = 0
        sentence: set[str] = set()  # the content words of the sentence read so far
        denying: set[str] = set()
        sentence_from = 0  # `denials` when the sentence started
        for at, raw in enumerate(raws):
            low = raw.lower()
            if low == "rathernot":
                low = "not"  # "pnpm rather than npm" is "pnpm, not npm" ...
                rather = True  # ... and turns npm down (`mismatches`)
            elif low in _NEGATIONS or low.endswith("n't"):
                rather = False
            before = raws[at - 1].lower() if at else ""
            between = text[found[at - 1].end():found[at].start()] if at else ""
            if negated >= 0 and between.strip():
                negated = -1  # a comma, a full stop: what a negation denies ends there
            if low in _CLAUSE_WORDS or _CLAUSE_MARKS.search(between):
                denials, in_clause = denials + in_clause % 2, 0
            if at in starts and at:
                denying.update(sentence if denials > sentence_from else ())
                sentence, sentence_from = set(), denials
            lows.add(low)
            seq.append(low)
            shown.append(low)
            acronym = raw.isupper() and len(raw) > 1  # "NO" in `NO_COLOR` denies nothing, "the IT team" names IT
            if low in ("unless", "until") and in_clause % 2:
                # "can't publish unless Python is installed" says Python is needed, it denies nothing; so does "no
                # article goes live until a reviewer has read it"
                in_clause += 1
            if (low in _NEGATIONS or low.endswith("n't")) and not acronym:
                negations.append(low)
                negated = at
                in_clause += 1
                if low == "never":
                    quantity.add("none")  # "never" is how often, as "sometimes" is
                continue
            after = raws[at + 1].lower() if at + 1 < len(raws) else ""
            nums = _number(raw)
            if low == "one" and (after in _NOT_ONE_BEFORE or (at and raws[at - 1].lower() in _NOT_ONE_AFTER)):
                nums = []
            if nums and rather and negated >= 0 and at - negated <= _DENIES:
                continue  # "on 17 October, not the 14th": a number turned down is not one the text gives
            if nums:
                cardinal = low not in _ORDINAL_WORDS and not low.endswith(("st", "nd", "rd", "th"))
                if not cardinal:
                    nums = [n.rstrip("stndrh") for n in nums]  # "14th" is 14, as "November 14" writes it
                unit = _DURATIONS.get(after) if cardinal and len(nums) == 1 else None
                if unit is not None:
                    nums = [_in_minutes(nums[0], unit)]  # "48 hours" and "two days" are one duration
                    used = at + 1
                numbers.update(nums)
                if raw[:1].isdigit():
                    digits.update(nums)
                kind = "day" if unit is None and _dated(raws, at) else _kind(raw, cardinal, unit is not None)
                kinds.update((n, kind) for n in nums)
                if kind == "count" and after and after not in _STOP and not _number(after):
                    counted.update((n, _stem(after)) for n in nums)
                if raw.endswith("%") and len(nums) == 1:
                    share = float(nums[0])  # a share of the whole is a quantifier too: "95%" is "most"
                    quantity.add("all" if share >= 100 else "most" if share >= 50 else "some" if share >= 15
                                 else "few")
                continue
            if low in _WHEN or (low == "may" and ((raw == "May" and (at not in starts or after in _MAY_BEFORE))
                                                  or before in _MAY_AFTER
                                                  or after[:1].isdigit() or before[:1].isdigit())):
                when.add(low.rstrip("s") if low.endswith("days") else low)
                continue
            # "at most 40" bounds a number; "no coffee at all" stresses a negation
            if low == "one" and after == "of" and before not in ("each", "every", "any", "no"):
                quantity.add("some")  # "just one of the grandparents", where the other said "both"
            if low in _QUANTIFIERS and not (before == "at" and low in ("most", "all")):
                said_of = ("some" if low == "few" and before == "a" else _QUANTIFIERS[low], at)  # "a few" are some
                quantity.add(said_of[0])
            if (low in _STOP and not acronym) or at == used:
                if negated >= 0 and seq[negated] in words:
                    negated = -1  # the words it denied end here
                continue
            stem = _UNIT_NAMES.get(low) or (low[:-1] if _ACRONYM_PLURAL.match(raw) else _stem(low))  # "IDs": "ID"s
            words.add(stem)
            sentence.add(stem)
            if 0 <= said_of[1] < at <= said_of[1] + _QUANTIFIED_WITHIN and not low.endswith("'s"):
                quantified.add((said_of[0], stem))  # "most of the user's plants": the plants, not the user
                said_of = ("", -1)
            seq[-1] = stem
            if negated >= 0 and at - negated <= _DENIES:
                denied.add(stem)  # the first content words after a negation, a word or two on ("no colour set")
                if rather:
                    passed_over.add(stem)
                negated = at  # the next word too, if it is one
            else:
                affirmed.add(stem)
            if any(c.isupper() for c in raw[1:]) or (raw[:1].isupper() and (
                    at not in starts or (after[:1] != "" and raws[at + 1].istitle() and at + 1 not in starts))):
                names[stem] = raw  # a first word is a name's too when the next word is ("Visual Studio Code")
        denials += in_clause % 2
        denying.update(sentence if denials > sentence_from else ())
        return cls(frozenset(words), frozenset(numbers), frozenset(when), names, tuple(negations), frozenset(lows),
                   frozenset(raws), tuple(seq), tuple(shown), frozenset(quantity), frozenset(kinds),
                   _senses(tuple(shown)), frozenset(denied), frozenset(affirmed - denied), marks, said, denials,
                   frozenset(counted), frozenset(denying), frozenset(quantified), frozenset(passed_over),
                   frozenset(digits))


def overlap(a: Claim, b: Claim) -> float:
    """The share of the shorter claim's content words (and values) that the other has: 1.0 when one says
    nothing the other does not."""
    left = a.words | a.numbers | a.when
    right = b.words | b.numbers | b.when
    if not left or not right:
        return 0.0
    return len(left & right) / min(len(left), len(right))


def _says(said: str, mark: str) -> bool:
    """Whether `said` names `mark` whole: `edit` is not named inside `editViewMode`."""
    return re.search(rf"(?<!\w){re.escape(mark)}(?!\w)", said) is not None


def mismatches(old: Claim, new: Claim, same_sense: Callable[[str, str], bool] | None = None) -> list[str]:
    """What `new` says otherwise than `old`, as evidence lines; empty when nothing differs but the wording.
    `same_sense(a, b)`: do two short spans of words mean the same (the probe's embedding); None: only the same
    stems do."""
    out: list[str] = []
    changed = [w for w in (*old.negations, *new.negations) if w in _CHANGES]
    if changed and (any(w in _CHANGES for w in old.negations) != any(w in _CHANGES for w in new.negations)):
        side = "the new text" if any(w in _CHANGES for w in new.negations) else "the existing memory"
        out.append(f'negation: "{changed[0]}" only in {side}')
    elif bool(old.denials) != bool(new.denials) \
            and _restates(new if new.denials else old, old if new.denials else new):
        only_new = [w for w in new.negations if w not in old.negations]
        only_old = [w for w in old.negations if w not in new.negations]
        if only_new:
            out.append(f'negation: "{" ".join(only_new)}" only in the new text')
        else:
            out.append(f'negation: "{" ".join(only_old or old.negations)}" only in the existing memory')
    elif (old.denied & new.affirmed) and (new.denied & old.affirmed) and _repeats(old, new):
        # The denial moved: each denies what the other says ("is not backed up, because it can be recreated" /
        # "is backed up, because it can't be recreated").
        out.append(f"negation: {', '.join(sorted(old.denied & new.affirmed))} denied only in the existing memory, "
                   f"{', '.join(sorted(new.denied & old.affirmed))} only in the new text")
    elif not old.denials and (new.passed_over & old.affirmed):
        # What the memory says is what the new text turns down, whatever else it rewords ("imports your notes
        # once" / "keeps your notes in sync rather than importing them once").
        out.append(f"negation: {', '.join(sorted(new.passed_over & old.affirmed))} turned down in the new text")
    elif not new.denials and (old.passed_over & new.affirmed):
        out.append(f"negation: {', '.join(sorted(old.passed_over & new.affirmed))} turned down in the existing "
                   "memory")
    # A count, a duration and an ordinal are never the same slot: "500 requests" is not changed by "every 90
    # days", nor "its first run" by "=0".
    gone_numbers, came_numbers = old.numbers - new.numbers, new.numbers - old.numbers
    if {k for x, k in old.kinds if x in gone_numbers} & {k for x, k in new.kinds if x in came_numbers}:
        out.append(f"number: {', '.join(sorted(gone_numbers))} -> {', '.join(sorted(came_numbers))}")
    elif recounted := _recounted(old, new):
        out.append(f"number: {recounted}")
    if old.when - new.when and new.when - old.when:
        out.append(f"date: {', '.join(sorted(old.when - new.when))} -> {', '.join(sorted(new.when - old.when))}")
    # A value named verbatim (a path, a #channel, a `code` span) that each text has and the other does not say
    # even unmarked, in two texts that say mostly the same words: another value in the same place ("in
    # `#infra-backups`" / "to the `#db-team` channel").
    lost, found = [m for m in old.marks if not _says(new.said, m)], [m for m in new.marks if not _says(old.said, m)]
    if lost and found and _repeats(old, new):
        out.append(f"value: {', '.join(sorted(lost))} -> {', '.join(sorted(found))}")
    gone = {s: w for s, w in old.names.items() if w not in new.cased and not _named_in(s, new)}
    came = {s: w for s, w in new.names.items() if w not in old.cased and not _named_in(s, old)}
    # Another name in the same sentence: the rest of the two claims is the same (a paraphrase that starts
    # "Staff can" where the memory starts "Employees may" differs in more than the name).
    rest = (old.words - set(gone)) | old.numbers | old.when, (new.words - set(came)) | new.numbers | new.when
    same_rest = bool(rest[0]) and bool(rest[1]) and len(rest[0] & rest[1]) >= _NAME_REST * min(map(len, rest))
    named = bool(gone and came and same_rest and not _acronyms(gone, came) and not _acronyms(came, gone))
    if named:
        out.append(f"name: {', '.join(sorted(gone.values()))} -> {', '.join(sorted(came.values()))}")
    colours = {w for w in old.lows if w in _COLOURS}, {w for w in new.lows if w in _COLOURS}
    if colours[0] - colours[1] and colours[1] - colours[0]:  # a closed class, as days and months are
        out.append(f"colour: {', '.join(sorted(colours[0] - colours[1]))} -> "
                   f"{', '.join(sorted(colours[1] - colours[0]))}")
    if old.quantity and new.quantity and not old.quantity & new.quantity:
        out.append(f"quantifier: {', '.join(sorted(old.quantity))} -> {', '.join(sorted(new.quantity))}")
    elif requantified := _requantified(old, new):
        out.append(f"quantifier: {requantified}")
    if not out:
        swapped = _swaps(old, new, same_sense)
        if swapped:
            out.append("word: " + "; ".join(f"{a} -> {b}" for a, b in swapped))
    flips = sorted(f"{w} -> {o}" for w in old.lows for o in _opposite().get(w, ())
                   if o in new.lows and w not in new.lows and o not in old.lows)
    if not flips and not out and not _denies_sense(old) and not _denies_sense(new):
        # Said anywhere ("requires signed commits" / "makes signed commits optional", "has versioning turned
        # on" / "versioning is turned off"), when neither text denies anything ("not required" is "optional").
        flips = sorted(f"{w} -> {o}" for w in old.senses
                       if (o := _SENSE_OPPOSITE[w]) in new.senses and w not in new.senses and o not in old.senses)
    if flips:
        out.append(f"opposite: {', '.join(flips)}")
    turned = "" if out else _compared(old, new)
    if turned:
        out.append(f"comparison: {turned}")
    return out


def _recounted(old: Claim, new: Claim) -> str:
    """Another number of the same thing, where the numbers as a set hide it because the old one is still said of
    something else ("twice a day, two puffs each time" / "three times a day, two puffs each time"; "4 engineers and
    2 designers" / "2 engineers and 2 designers"): "2 -> 3", or ""."""
    for unit in sorted({u for _, u in old.counted} & {u for _, u in new.counted}):
        gone = {n for n, u in old.counted if u == unit} - {n for n, u in new.counted if u == unit}
        came = {n for n, u in new.counted if u == unit} - {n for n, u in old.counted if u == unit}
        if gone and came:
            return f"{', '.join(sorted(gone))} -> {', '.join(sorted(came))}"
    return ""


def _requantified(old: Claim, new: Claim) -> str:
    """Another quantifier of the same thing, where the quantifiers as a set hide it because the old one is still
    said of something else ("most of the plants are succulents" / "few of the plants are succulents; most are
    ferns"): "most -> few", or ""."""
    for word in sorted({w for _, w in old.quantified} & {w for _, w in new.quantified}):
        gone = {q for q, w in old.quantified if w == word}
        came = {q for q, w in new.quantified if w == word}
        if not gone & came:
            return f"{', '.join(sorted(gone))} -> {', '.join(sorted(came))}"
    return ""


def _denies_sense(claim: Claim) -> bool:
    """Does a negation in the text turn one of its `_SENSES` words around ("not required", "isn't turned on")?
    Then the sense it says is not the one its words name. A negation elsewhere ("with no sugar") leaves it."""
    if not claim.negations:
        return False
    return any(_stem(w) in claim.denied for w in claim.shown if w in _SENSES_WORDS) or claim.denials > 1


def _senses(shown: tuple[str, ...]) -> frozenset[str]:
    """The senses (`_SENSES`) a text's words say: "required" for "requires", "on" for "turned on"."""
    out = {_SENSES[w] for w in shown if w in _SENSES}
    out.update(_SENSES[f"{a} {b}"] for a, b in itertools.pairwise(shown) if f"{a} {b}" in _SENSES)
    return frozenset(out)


def _comparison(claim: Claim) -> tuple[frozenset[str], tuple[str, int], frozenset[str]] | None:
    """What a text compares: (the content words before its comparative, its measure and +1 for "more", "larger"
    and the like or -1 for "fewer", "cheaper", the content words after its "than": what it is compared with), or
    None without one comparison of two things ("more than one field" counts, it compares nothing)."""
    shown, seq = claim.shown, claim.seq
    if shown.count("than") != 1:
        return _order(claim)
    at = shown.index("than")
    after = [w for w in seq[at + 1:] if w in claim.words and w != "one"][:_COMPARED_WITHIN]
    if not after or (at + 1 < len(shown) and (_number(shown[at + 1]) or shown[at + 1][:1].isdigit())):
        return None
    for back in range(at - 1, max(-1, at - 1 - _COMPARED_WITHIN), -1):
        way = _MORE_LESS.get(shown[back])
        if back and shown[back - 1] in ("more", "less") and (said := _comparative(shown[back])):
            back, way = back - 1, (said[0], said[1] * _MORE_LESS[shown[back - 1]][1])  # "more slowly" is slower
        if way is not None:
            return frozenset(w for w in seq[:back] if w in claim.words), way, frozenset(after)
    return None


def _comparative(word: str) -> tuple[str, int] | None:
    """The measure of the comparative an adjective or adverb makes ("slowly" and "slow": "slower", "easily":
    "easier", "big": "bigger"), read after "more" or "less": a comparison said in two words measures what the one
    word would ("reads more slowly than" / "reads faster than")."""
    base = word[:-2] if word.endswith("ly") and len(word) > 4 else word
    base = _IRREGULAR.get(base, base)
    for form in (base, base + "er", base + "r", base[:-1] + "ier", base + base[-1:] + "er"):
        if form in _MORE_LESS and form not in ("more", "less"):
            return _MORE_LESS[form]
    return None


def _order(claim: Claim) -> tuple[frozenset[str], tuple[str, int], frozenset[str]] | None:
    """An order as a comparison of times: "X comes after Y" says X is later than Y, "X before Y" and "X ahead of
    Y" earlier, and so does a preference ("prioritises X over Y", "prefers X over Y": X goes first). Only with one
    such word, not first (a fronted "Before Y, X" is left alone), followed by what X is ordered against: "after
    2pm" and "before Friday" bound a time, they order two things no more than "at 2pm"."""
    shown, seq = claim.shown, claim.seq
    found = [i for i, w in enumerate(shown) if w in ("before", "after")
             or (w == "ahead" and i + 1 < len(shown) and shown[i + 1] == "of")
             or (w == "over" and any(p in _PREFERS for p in shown[max(0, i - 1 - _COMPARED_WITHIN):i]))]
    if len(found) != 1 or found[0] == 0:
        return None
    at = found[0]
    near = shown[max(0, at - 2):at]
    if shown[at - 1] in _NOT_ORDERS or any(_number(w) or w in _DURATIONS or w == "half" for w in near):
        return None  # "named after its id", "looks after the twins"; "thirty minutes before breakfast" is when
    nxt = at + 2 if shown[at] == "ahead" else at + 1
    if nxt >= len(shown) or _number(shown[nxt]) or shown[nxt][:1].isdigit() or shown[nxt] in _WHEN:
        return None
    after = [w for w in seq[nxt:] if w in claim.words][:_COMPARED_WITHIN]
    before = frozenset(w for w in seq[:at] if w in claim.words)
    if not after or not before:
        return None
    return before, ("time", 1 if shown[at] == "after" else -1), frozenset(after)


def _compared(old: Claim, new: Claim) -> str:
    """How `new` turns `old`'s comparison around, or "": the same two things, the same way round, with the
    opposite comparative ("larger than" / "smaller than"), or the other way round with the same one ("Berlin
    ships more than Poznań" / "Poznań ships more than Berlin"). The other way round with the opposite says the
    same ("X is cheaper than Y" / "Y costs more than X"). Which way round is told by what each is compared with:
    the same, or what the other put first."""
    a, b = _comparison(old), _comparison(new)
    if a is None or b is None or a[1][0] != b[1][0]:
        return ""
    if a[2] & old.names.keys() and b[2] & new.names.keys():  # names tell the sides apart best ("the English one")
        a = (a[0] & old.names.keys(), a[1], a[2] & old.names.keys())
        b = (b[0] & new.names.keys(), b[1], b[2] & new.names.keys())
    # A word before the comparative that is also what it is compared with tells neither side: "the user's sister
    # is younger than the user" puts "user" first as the sister's owner.
    a, b = (a[0] - a[2], a[1], a[2]), (b[0] - b[2], b[1], b[2])
    kept = len(a[2] & b[2])
    swapped = len(a[2] & b[0]) + len(b[2] & a[0])
    if kept == swapped:
        return ""
    if kept > swapped and a[1] != b[1]:
        return "the opposite comparative, the same way round"
    if swapped > kept and a[1] == b[1]:
        return "the same comparative, the other way round"
    return ""


def _dated(raws: list[str], at: int) -> bool:
    """Is the number at `at` a day of a month: beside a month's name ("28 April", "April 28", "the 14th of
    November")? A date, not a count of things: "due on 28 April" is not changed by "2,500 words"."""
    def month(i: int) -> bool:
        if not 0 <= i < len(raws):
            return False
        word = raws[i].lower()
        return word in _MONTHS and (word != "may" or raws[i] == "May" or raws[at][:1].isdigit())

    of = at + 2 < len(raws) and raws[at + 1].lower() == "of"
    return month(at - 1) or month(at + 1) or (of and month(at + 2))


def _kind(raw: str, cardinal: bool, duration: bool) -> str:
    """What a number counts, as written: a duration, a rank, a time of day, a year, a share, a version or
    decimal, or things. Two claims' numbers differ only in one of these: "in 2026" is not changed by "3.9 to
    3.13", nor "at 08:00" by "ten lines", nor "a 1957 album" by "rated a 7"."""
    low = raw.lower()
    if duration:
        return "duration"
    if not cardinal:
        return "rank"
    if ":" in low or low.endswith(("am", "pm")):
        return "time"
    if low.endswith("%"):
        return "share"
    if len(low) == 4 and low.isdecimal() and 1900 <= int(low) <= 2199:  # (`²²²²` is isdigit(), not int())
        return "year"
    if "." in low:
        return "decimal"
    return "count"


def _named_in(stem: str, claim: Claim) -> bool:
    """Does `claim` name `stem`, or a name one starts the other ("Brazil" / "Brazilian") or ends ("vCPUs" /
    "CPUs"), or a name of the same root with another ending ("Byzantium" / "Byzantine", "Canada" / "Canadian": a
    place and its people's or its things' word)?"""
    return stem in claim.names or any(
        (len(min(stem, n, key=len)) >= 4 and (n.startswith(stem) or stem.startswith(n)))
        or (len(min(stem, n, key=len)) >= 3 and (n.endswith(stem) or stem.endswith(n)))
        or _same_root(stem, n) for n in claim.names)


def _same_root(a: str, b: str) -> bool:
    """Do two names share a root of `_ROOT` letters or more, each with at most `_ROOT_ENDING` letters after it?"""
    a, b = a.lower(), b.lower()
    root = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return root >= _ROOT and len(a) - root <= _ROOT_ENDING and len(b) - root <= _ROOT_ENDING


def _repeats(denying: Claim, other: Claim) -> bool:
    """Do the two texts say mostly the same words (the content words only one of them has are no more than
    those both have)? A denial restates the claim it turns around ("must not be charged" / "must be charged"); a
    "not" in a sentence about something else ("does not support shortcuts yet" beside "is still
    experimental") denies that, not the memory."""
    return _mostly_same(denying.words, other.words)


def _mostly_same(a: frozenset[str], b: frozenset[str]) -> bool:
    """Are the words only one of `a` and `b` has no more than those both have?"""
    return len(a - b) + len(b - a) <= len(a & b)


def _restates(denying: Claim, other: Claim) -> bool:
    """Does a denial turn `other`'s claim around: the two texts say mostly the same words (`_repeats`), or the
    sentence that denies does, whatever else the text goes on to say ("The user isn't allergic to penicillin; the
    rash turned out to be viral" / "The user is allergic to penicillin")?"""
    return _repeats(denying, other) or _mostly_same(denying.denying, other.words)


def _swaps(old: Claim, new: Claim, same_sense: Callable[[str, str], bool] | None) -> list[tuple[str, str]]:
    """The spans of `old` that `new` puts another span in the place of, every other word the same: what an
    edited claim looks like, where a paraphrase rewords more than its value. Empty when the texts differ
    otherwise too (an added or dropped content word, more or longer spans), when a span is a name (the name
    check's, which knows acronyms) or only small words ("in" / "on"), or when the two spans mean the same."""
    if max(len(old.seq), len(new.seq)) > _SWAP_WORDS:
        return []  # lining up takes time quadratic in the words: a claim with one value swapped is a sentence or two
    blocks = SequenceMatcher(None, old.seq, new.seq, autojunk=False).get_opcodes()
    lined = sum(i2 - i1 for op, i1, i2, _, _ in blocks if op == "equal")
    if lined < _SWAP_REST * max(len(old.seq), len(new.seq)) or len(old.words & new.words) < 2:
        return []
    out: list[tuple[str, str]] = []
    spans = 0
    for op, i1, i2, j1, j2 in blocks:
        if op == "equal":
            continue
        a, b = old.seq[i1:i2], new.seq[j1:j2]
        said_a, said_b = " ".join(old.shown[i1:i2]), " ".join(new.shown[j1:j2])
        if op == "replace" and _opposed((*a, *old.shown[i1:i2]), (*b, *new.shown[j1:j2])):
            spans += 1
            if spans > _SWAP_SPANS or _content_len(a, old) > _SWAP_SPAN or _content_len(b, new) > _SWAP_SPAN:
                return []
            out.append((said_a, said_b))  # "on" for "off", "slower" for "faster": never the same sense
            continue
        content_a, content_b = [w for w in a if w in old.words], [w for w in b if w in new.words]
        if not content_a and not content_b:
            continue  # "the" for "a", "in" for "on"
        said_q = ({_QUANTIFIERS[w] for w in old.shown[i1:i2] if w in _QUANTIFIERS},
                  {_QUANTIFIERS[w] for w in new.shown[j1:j2] if w in _QUANTIFIERS})
        if said_q[0] & said_q[1]:
            continue  # "only a handful of" for "very few": the same quantity (the quantifier check's)
        spans += 1
        if op != "replace" or not content_a or not content_b or spans > _SWAP_SPANS \
                or len(content_a) > _SWAP_SPAN or len(content_b) > _SWAP_SPAN:
            return []  # a word added or left out, or a rewording: not one value for another
        if any(w in old.names for w in content_a) and any(w in new.names for w in content_b) \
                and not any(old.names[w] in new.cased for w in content_a if w in old.names) \
                and not any(new.names[w] in old.cased for w in content_b if w in new.names):
            continue  # one name for another: the name check's (it knows acronyms), unless one is said elsewhere
            # in the other text, where the name check cannot see it ("under Companies ... `Games.base`" / "under
            # Games ... `Games.base`")
        if same_sense is None or not same_sense(said_a, said_b):
            out.append((said_a, said_b))
    return out


def _content_len(span: tuple[str, ...], claim: Claim) -> int:
    return sum(1 for w in span if w in claim.words)


def _opposed(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Does a word of one span have its opposite (`_SWAP_OPPOSITES`) in the other, and not in its own?"""
    opposed = _swap_opposed()
    return any((x, y) in opposed and y not in a and x not in b for x in a for y in b)


def _inflections(word: str) -> tuple[str, ...]:
    """`word` and its regular inflections, for a pair of WordNet's base forms to meet the words a sentence says:
    "-s"/"-es", "-ed"/"-d", "-ing", "-er", "-est" (a final "e" dropped, "y" after a consonant "i"), and the stem
    `Claim.seq` holds ("raise", "raised" and "raises" are "rais")."""
    base = word[:-1] if word.endswith("e") else word
    yi = word[:-1] + "i" if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou" else word
    e = word.endswith("e")
    return (word, yi + ("es" if word.endswith(("s", "x", "z", "ch", "sh")) else "s"), word + "d" if e else yi + "ed",
            base + "ing", word + "r" if e else yi + "er", word + "st" if e else yi + "est", _stem(word))


@functools.cache
def _wordnet() -> tuple[tuple[str, str], ...]:
    """WordNet 3.0's direct antonyms (data/antonyms.txt, written by scripts/wordnet_antonyms.py), read once."""
    text = importlib.resources.files("vivary_git.memory").joinpath("data", "antonyms.txt").read_text("utf-8")
    return tuple((a, b) for a, b in (line.split() for line in text.splitlines() if line and not line.startswith("#")))


@functools.cache
def _swap_opposed() -> frozenset[tuple[str, str]]:
    """`_SWAP_OPPOSED` and WordNet's antonyms, each in every regular inflection ("raised" / "lowered")."""
    out = set(_SWAP_OPPOSED)
    for a, b in _wordnet():
        out.update(pair for x, y in zip(_inflections(a), _inflections(b), strict=True) if x != y
                   for pair in ((x, y), (y, x)))
    return frozenset(out)


@functools.cache
def _opposite() -> dict[str, frozenset[str]]:
    """Words of opposite sense wherever they stand: `_ANTONYMS`, and WordNet's antonyms as written (no inflection)
    but for small words, quantifiers, negations and comparatives, which a paraphrase turns around ("X is lighter
    than Y" / "Y is heavier than X", "all of them" / "none of them left out")."""
    out: dict[str, set[str]] = {}
    for w, o in _OPPOSITE.items():
        out.setdefault(w, set()).add(o)
    skip = _STOP | _QUANTIFIERS.keys() | _NEGATIONS | _MORE_LESS.keys()
    for a, b in _wordnet():
        if not {a, b} & skip and not a.endswith(("er", "est")) and not b.endswith(("er", "est")):
            out.setdefault(a, set()).add(b)
            out.setdefault(b, set()).add(a)
    return {w: frozenset(o) for w, o in out.items()}


def _acronyms(long: dict[str, str], short: dict[str, str]) -> bool:
    """Is every name in `short` the initials of names in `long` ("VS" for "Visual Studio")?"""
    initials = "".join(w[0].upper() for w in long.values())
    return all(w.isupper() and len(w) >= 2 and w in initials for w in short.values())
