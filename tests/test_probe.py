"""The similarity probe's verdicts (duplicate, update, related, new), each among several existing memories where
the right one is not the first; `remember --supersede`; the labelled pairs' goals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo

from vivary_git.memory.writes.claims import Claim, mismatches
from vivary_git.memory.writes.probe import Candidate, Probe

PAIRS = Path(__file__).parent / "data" / "probe_pairs.jsonl"
# The held-out sets in the order written: each before the probe change measured on it (tests/data/probe_pairs.md)
HELD_OUT = ["probe_holdout.jsonl", *(f"probe_holdout{n}.jsonl" for n in range(2, 20))]
LOCAL = '[memory]\nenabled = true\nprovider = "vivary-local"\n'

# Several memories of one subject and of others: the one a verdict must name is never the first.
EXISTING = [
    ("tablet-storage", "The survey tablets are stored in the locked cabinet in room 12."),
    ("deploy-review", "A production deploy needs a green CI run and one approving review."),
    ("rate-limit-429", "Requests over the API rate limit get an HTTP 429 answer with a Retry-After header."),
    ("tablet-charge", "Survey tablets must be fully charged before each Thursday field trip."),
    ("rate-limit", "The API rate limit is 600 requests per minute per token."),
    ("billing-owner", "The billing service is owned by Priya Raman's team."),
    ("deploy-days", "We deploy to production on Tuesdays and never on Fridays."),
]


def _candidates() -> list[Candidate]:
    return [Candidate(i, f"memories/{i}.md", i, t) for i, t in EXISTING]


@pytest.fixture(scope="module")
def cosine() -> Probe:
    pytest.importorskip("onnxruntime", reason="the embed extra is not installed")
    from vivary_git.memory.local.embed import load_embedder

    embedder = load_embedder("minilm-l6-int8", optimize=False)
    return Probe(0.75, lambda: embedder)


def test_a_full_span_cache_starts_again_without_losing_the_span_it_held(cosine: Probe,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Swapped spans' vectors are kept up to `_SPANS`, then the cache starts again. When one of the two spans was
    kept and the other was not, starting again dropped the kept one and the lookup raised KeyError: in a
    long-running process (the MCP server), an add after some 4,096 spans failed."""
    from vivary_git.memory.writes import probe

    embedder = cosine._get_embedder()
    assert embedder is not None
    monkeypatch.setattr(probe, "_SPANS", 1)
    monkeypatch.setattr(cosine, "_spans", {})
    assert cosine._same_sense(embedder, "Tuesday", "Tuesday")
    cosine._same_sense(embedder, "red", "crimson")  # two kept now: over the bound
    assert cosine._same_sense(embedder, "crimson", "scarlet") in (True, False)  # "crimson" kept, "scarlet" not


@pytest.mark.parametrize(("text", "verdict", "target", "evidence"), [
    ("Before every Thursday field trip, the survey tablets need a full charge.", "duplicate", "tablet-charge", ""),
    ("Survey tablets must not be fully charged before each Thursday field trip.", "update", "tablet-charge",
     "negation"),
    ("Each token may make up to 600 API requests a minute.", "duplicate", "rate-limit", ""),
    ("The API rate limit is 1200 requests per minute per token.", "update", "rate-limit", "number: 600 -> 1200"),
    ("The billing service is owned by Marcus Lee's team.", "update", "billing-owner", "name"),
    ("We deploy to production on Thursdays and never on Fridays.", "update", "deploy-days", "date"),
    ("We no longer deploy to production on Tuesdays.", "update", "deploy-days", "negation"),
    ("A production deploy needs a red CI run and one approving review.", "update", "deploy-review",
     "colour: green -> red"),
    ("The survey tablets are stored in the open cabinet in room 12.", "update", "tablet-storage",
     "word: locked -> open"),
    ("Survey tablets must be fully charged before some Thursday field trips.", "update", "tablet-charge",
     "quantifier: all -> some"),
    ("Survey tablets must be fully charged before every Thursday field trip.", "duplicate", "tablet-charge", ""),
    ("Priya Raman's team also runs the invoicing dashboard.", "related", "billing-owner", ""),
    ("The survey tablets need a charging cable in the field kit.", "related", "tablet-charge", ""),
    ("The coffee machine is on the third floor.", "new", "", ""),
])
def test_the_verdict_names_the_right_memory_among_several(cosine: Probe, text: str, verdict: str, target: str,
                                                          evidence: str) -> None:
    got = cosine.check(text, _candidates())
    assert got.verdict == verdict, got
    if target:
        assert got.matches[0].id == target, got  # not the first memory, nor the most similar of another subject
        assert evidence in "; ".join(got.matches[0].evidence)
    else:
        assert got.matches == []


def test_the_closest_memory_decides_between_update_and_duplicate(cosine: Probe) -> None:
    """A text that changes a value of the memory it is closest to is that memory's update, though a farther
    memory of the same subject embeds close enough to pass for a duplicate of it."""
    memories = [
        Candidate("remote", "remote.md", "remote", "A remote vault in Dendron is cloned from a git repository."),
        Candidate("local", "local.md", "local", "A local vault is what you start off with in Dendron."),
    ]
    got = cosine.check("A remote vault is what you start off with in Dendron.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "local"), got
    assert got.matches[0].evidence == ["word: local -> remote"]
    assert got.matches[0].score > max(m.score for m in got.matches[1:])
    # the same memories, a paraphrase of the closest: a duplicate of it
    got = cosine.check("In Dendron you start off with a local vault.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "local"), got


def test_the_same_values_in_other_words_are_a_duplicate_below_the_duplicate_cosine(cosine: Probe) -> None:
    """Most words in common and the same numbers, days and months (at least one): the same claim, though the
    wording puts the cosine under the configured 0.75; another number in the same words is an update."""
    memories = [
        Candidate("cake", "cake.md", "cake", "The cake for Ayşe's birthday comes from the bakery on Rua Augusta."),
        Candidate("dinner", "dinner.md", "dinner", "Twelve people have confirmed for Ayşe's fortieth birthday "
                  "dinner."),
    ]
    got = cosine.check("12 guests have said yes to Ayşe's 40th birthday dinner.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "dinner"), got
    assert 0.65 <= got.matches[0].score < 0.75, got
    got = cosine.check("Fourteen people have confirmed for Ayşe's fortieth birthday dinner.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "dinner"), got
    assert got.matches[0].evidence == ["number: 12 -> 14"]


def test_a_phrasal_after_is_no_order_of_two_things(cosine: Probe) -> None:
    """"Looks after" is takes care of, not later than: the same claim turned into the passive is a duplicate, not
    an order turned around."""
    memories = [
        Candidate("swim", "swim.md", "swim", "The twins' swimming lessons are on Saturday mornings at the leisure "
                  "centre."),
        Candidate("nursery", "nursery.md", "nursery", "Grandpa Tomás picks the twins up from nursery on Fridays."),
        Candidate("sitter", "sitter.md", "sitter", "The user's neighbour, Mrs Okafor, looks after the twins on "
                  "Thursdays."),
    ]
    got = cosine.check("On Thursdays the twins are looked after by Mrs Okafor, the user's neighbour.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "sitter"), got


def test_a_denial_with_unless_says_what_is_needed(cosine: Probe) -> None:
    """"Can't X unless Y" is "X needs Y": a duplicate of the memory that says so; a plain denial of it is still its
    update."""
    memories = [
        Candidate("notes", "notes.md", "notes", "Release notes are written by whoever cuts the release."),
        Candidate("cut", "cut.md", "cut", "A release is cut from the main branch every second Tuesday."),
        Candidate("sign", "sign.md", "sign", "To sign a release, your GPG key must be on the company keyserver."),
    ]
    got = cosine.check("You can't sign a release unless your GPG key is on the company keyserver.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "sign"), got
    got = cosine.check("You can sign a release even if your GPG key is not on the company keyserver.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "sign"), got


def test_a_denial_with_until_says_what_comes_first(cosine: Probe) -> None:
    """"No invoice is paid until the lead has approved it" is "every invoice is approved before it is paid": a
    duplicate of the memory that says so; a plain denial of it is still its update."""
    memories = [
        Candidate("tool", "tool.md", "tool", "Invoices are paid through the accounts payable module of the ERP."),
        Candidate("terms", "terms.md", "terms", "Suppliers are paid within 30 days of the invoice date."),
        Candidate("approve", "approve.md", "approve", "Every invoice over 5000 euros is approved by the finance lead "
                  "before it is paid."),
    ]
    got = cosine.check("No invoice over 5000 euros is paid until the finance lead has approved it.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "approve"), got
    got = cosine.check("Invoices over 5000 euros are not approved by the finance lead before they are paid.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "approve"), got


def test_another_count_of_one_thing_is_an_update_though_its_number_is_said_elsewhere(cosine: Probe) -> None:
    """"Three times a day, two tablets each time" changes "twice a day, two tablets each time": the 2 it drops is
    still said of the tablets, so only numbers read with what they count tell the change."""
    memories = [
        Candidate("walks", "walks.md", "walks", "The dog is walked before breakfast and after dinner."),
        Candidate("vet", "vet.md", "vet", "The dog's vet is in Brixton."),
        Candidate("tablet", "tablet.md", "tablet", "The dog gets its joint tablet twice a day, two tablets each time."),
    ]
    got = cosine.check("The dog gets its joint tablet three times a day, two tablets each time.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "tablet"), got
    assert got.matches[0].evidence == ["number: 2 -> 3"]


def test_short_and_long_are_opposed_wherever_they_stand(cosine: Probe) -> None:
    """"Kept short" / "long, detailed": the opposite sense in another place of a reworded sentence, which the
    embedding puts close enough for a duplicate (0.94)."""
    memories = [
        Candidate("when", "when.md", "when", "The user reviews pull requests every morning."),
        Candidate("where", "where.md", "where", "The user's team uses GitHub for code review."),
        Candidate("length", "length.md", "length", "The user wants code reviews kept short, with blocking issues "
                  "listed first."),
    ]
    got = cosine.check("The user wants long, detailed code reviews, with blocking issues listed first.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "length"), got
    assert got.matches[0].evidence == ["opposite: short -> long"]


def test_a_denial_followed_by_its_reason_is_an_update(cosine: Probe) -> None:
    """The sentence that denies restates the memory; the reason after it adds words of its own, which must not
    hide the denial (a duplicate at 0.86 otherwise)."""
    memories = [
        Candidate("engine", "engine.md", "engine", "The staging database runs Postgres 16."),
        Candidate("reset", "reset.md", "reset", "The staging database is reset every Sunday."),
        Candidate("backup", "backup.md", "backup", "The staging database is backed up."),
    ]
    got = cosine.check("The staging database is not backed up. Its data comes from the seed scripts every morning "
                       "at six.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "backup"), got
    assert got.matches[0].evidence == ['negation: "not" only in the new text']


def test_a_word_on_both_sides_of_a_comparison_tells_neither_side(cosine: Probe) -> None:
    """"The user's brother is older than the user": "user" before the comparative is the brother's owner, not a
    side, so the opposite comparative is an update and the same one, reworded, a duplicate (turned around by that
    "user" before)."""
    memories = [
        Candidate("city", "city.md", "city", "The user's brother Tomasz lives in Gdańsk with his wife."),
        Candidate("job", "job.md", "job", "The user's brother Tomasz works night shifts as a nurse."),
        Candidate("age", "age.md", "age", "The user's brother Tomasz is two years older than the user."),
    ]
    got = cosine.check("Tomasz, the user's brother, is two years younger than the user.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "age"), got
    assert got.matches[0].evidence == ["comparison: the opposite comparative, the same way round"]
    got = cosine.check("Tomasz, the user's brother, is two years older than the user.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "age"), got


def test_another_quantifier_of_one_thing_is_an_update_though_the_old_one_is_said_elsewhere(cosine: Probe) -> None:
    """"Few of the books are paperbacks; most of them are hardbacks" changes "most of the books are paperbacks":
    the "most" it drops is still said of the hardbacks, so only quantifiers read with what they are said of tell
    the change."""
    memories = [
        Candidate("shelf", "shelf.md", "shelf", "The user keeps their books on an oak shelf in the hallway."),
        Candidate("club", "club.md", "club", "The user's book club meets on the first Monday of the month."),
        Candidate("kind", "kind.md", "kind", "Most of the user's books are second-hand paperbacks."),
    ]
    got = cosine.check("Few of the user's books are second-hand paperbacks; most of them are hardbacks.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "kind"), got
    assert got.matches[0].evidence == ["quantifier: most -> few"]
    got = cosine.check("Most of the books the user owns are paperbacks bought second-hand.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "kind"), got


def test_what_was_switched_off_or_shut_down_is_no_longer(cosine: Probe) -> None:
    """"Was switched off", "has been shut down": what a memory says still runs is not so now, an update, though
    the rest of the text adds words of its own (a duplicate at 0.80 otherwise)."""
    memories = [
        Candidate("owner", "owner.md", "owner", "The CRM is administered by the sales operations team."),
        Candidate("fields", "fields.md", "fields", "The data warehouse keeps CRM records for seven years."),
        Candidate("sync", "sync.md", "sync", "The nightly sync of the CRM to the data warehouse still runs at 02:00."),
    ]
    for text in ("The nightly sync of the CRM to the data warehouse was switched off last year; the analysts query "
                 "the CRM directly now.", "The nightly CRM sync to the data warehouse has been shut down."):
        got = cosine.check(text, memories)
        assert (got.verdict, got.matches[0].id) == ("update", "sync"), got
        assert got.matches[0].evidence == ['negation: "nolonger" only in the new text']
    got = cosine.check("At 02:00 every night the CRM is still synced to the data warehouse.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "sync"), got


def test_what_rather_than_turns_down_is_denied_in_a_reworded_text(cosine: Probe) -> None:
    """"Keeps it mirrored, rather than copying it once": a memory that says it makes a one-off copy is turned
    down, though the rest of the text rewords too much for a denial of the same claim (related otherwise)."""
    memories = [
        Candidate("phone", "phone.md", "phone", "The user's new phone is a Pixel 8 bought in March."),
        Candidate("shared", "shared.md", "shared", "The user shares their work calendar with their manager."),
        Candidate("copy", "copy.md", "copy", "The calendar migration tool is a cut-down version of the backup "
                  "wizard, made for a one-off copy of the user's old calendar."),
    ]
    got = cosine.check("The calendar migration tool keeps the user's old calendar continuously mirrored into the new "
                       "account, rather than copying it once.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "copy"), got
    assert got.matches[0].evidence == ["negation: copy turned down in the new text"]


def test_the_same_words_both_ways_are_a_duplicate_below_the_duplicate_cosine(cosine: Probe) -> None:
    """The same content words, both ways, and no value changed: the same claim, though the wording puts the cosine
    at 0.70; another quantifier in the same words is still an update."""
    memories = [
        Candidate("bay", "bay.md", "bay", "The depot's loading bay opens at 06:00."),
        Candidate("heat", "heat.md", "heat", "The depot is heated by a heat pump."),
        Candidate("glazing", "glazing.md", "glazing", "All the windows at the depot are double-glazed."),
    ]
    got = cosine.check("Every window at the depot has double glazing.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "glazing"), got
    assert 0.65 <= got.matches[0].score < 0.75, got
    got = cosine.check("Only some windows at the depot have double glazing.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "glazing"), got


def test_a_number_beside_a_month_is_a_day_of_the_month(cosine: Probe) -> None:
    """"On 12 June" is a date: another day of the month, however written ("the 19th of June"), is an update, and a
    count of something else ("40 stalls") changes no date."""
    memories = [
        Candidate("beds", "beds.md", "beds", "The community garden has 24 raised beds, shared by 30 households."),
        Candidate("compost", "compost.md", "compost", "The community garden's compost bays are turned every "
                  "fortnight."),
        Candidate("sale", "sale.md", "sale", "The community garden's seedling sale is on 12 June."),
    ]
    got = cosine.check("The community garden's seedling sale is on the 19th of June.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "sale"), got
    assert got.matches[0].evidence == ["number: 12 -> 19"]
    got = cosine.check("Around 40 stalls are booked for the community garden's seedling sale.", memories)
    assert (got.verdict, got.matches[0].id) == ("related", "sale"), got


def test_a_name_put_in_the_place_of_another_is_an_update_though_the_memory_names_it_elsewhere(cosine: Probe) -> None:
    """"Under Events" for "under Clients", in a memory that also names "Events" in a path: the name check sees no
    new name, so the swap of one name for the other tells the change (a duplicate at 0.97 otherwise)."""
    memories = [
        Candidate("backup", "backup.md", "backup", "The photo archive is copied to the NAS every night."),
        Candidate("edit", "edit.md", "edit", "Wedding shoots are edited in Lightroom within two weeks."),
        Candidate("files", "files.md", "files", "The photo archive files each wedding under Clients and keeps its "
                  "raw images in the `Events/Raw` folder."),
    ]
    got = cosine.check("The photo archive files each wedding under Events and keeps its raw images in the "
                       "`Events/Raw` folder.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "files"), got
    assert got.matches[0].evidence == ["word: clients -> events"]
    got = cosine.check("Each wedding is filed under Clients in the photo archive, with its raw images kept in the "
                       "`Events/Raw` folder.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "files"), got


def test_any_more_at_the_end_of_a_clause_is_no_longer(cosine: Probe) -> None:
    """"Doesn't go ... any more", written as two words, says what is no longer so, as "anymore" does, though the
    sentence that denies says little of the memory's words (a duplicate otherwise); "any more" before what it
    counts is no such thing."""
    memories = [
        Candidate("flat", "flat.md", "flat", "The user's aunt lives in a flat above the pharmacy in Leith."),
        Candidate("cats", "cats.md", "cats", "The user's aunt has two cats, Pip and Moss."),
        Candidate("choir", "choir.md", "choir", "The user's aunt sings in the church choir on Thursday evenings."),
    ]
    got = cosine.check("The user's aunt has left the church choir; since her hip operation last winter she doesn't "
                       "go to its Thursday evening rehearsals any more.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "choir"), got
    assert got.matches[0].evidence == ['negation: "anymore" only in the new text']
    got = cosine.check("The user's aunt sings in the church choir on Thursday evenings, which could do with any more "
                       "altos it can find.", memories)
    assert got.verdict != "update", got


def test_a_comparative_in_two_words_measures_what_the_one_word_would(cosine: Probe) -> None:
    """"Types more slowly than" is "types slower than": the opposite of "faster than", the same two things the same
    way round, is an update (a duplicate at 0.87 otherwise); "more quickly" is "faster", and "less quickly" turned
    around says the same."""
    memories = [
        Candidate("swim", "swim.md", "swim", "The user's son Idris swims at the leisure centre on Tuesdays."),
        Candidate("violin", "violin.md", "violin", "The user's son Idris is learning the violin."),
        Candidate("typing", "typing.md", "typing", "The user's son Idris types faster on a laptop than on a tablet."),
    ]
    got = cosine.check("Idris types more slowly on a laptop than on a tablet, since he has only just been given one.",
                       memories)
    assert (got.verdict, got.matches[0].id) == ("update", "typing"), got
    assert got.matches[0].evidence == ["comparison: the opposite comparative, the same way round"]
    for text in ("Idris, the user's son, types more quickly on a laptop than on a tablet.",
                 "On a tablet, the user's son Idris types less quickly than on a laptop."):
        got = cosine.check(text, memories)
        assert (got.verdict, got.matches[0].id) == ("duplicate", "typing"), got


def test_not_as_good_as_is_a_comparison_not_a_denial(cosine: Probe) -> None:
    """"Isn't as good at draughts as" is "worse at draughts than": the same comparison turned around is a duplicate
    of the memory (an update for its "isn't" otherwise); the sides kept with "worse" turn it around."""
    memories = [
        Candidate("cello", "cello.md", "cello", "The user's niece Leila plays the cello in the school orchestra."),
        Candidate("city", "city.md", "city", "The user's niece Leila lives in Bristol with her mother."),
        Candidate("skill", "skill.md", "skill", "The user's niece Leila is better at chess than at draughts."),
    ]
    got = cosine.check("At draughts, the user's niece Leila isn't as good as at chess.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "skill"), got
    got = cosine.check("Leila, the user's niece, is worse at chess than at draughts.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "skill"), got
    assert got.matches[0].evidence == ["comparison: the opposite comparative, the same way round"]


def test_a_place_and_its_adjective_are_one_name(cosine: Probe) -> None:
    """"Mexico" and "Mexican" share their root: a paraphrase that names the place where the memory names its
    pottery is a duplicate (an update for "another name" otherwise); another country's word is still an update."""
    memories = [
        Candidate("job", "job.md", "job", "The user's cousin Rafael teaches maths at a school in Porto."),
        Candidate("run", "run.md", "run", "The user's cousin Rafael is training for the Lisbon marathon."),
        Candidate("pottery", "pottery.md", "pottery", "The user's cousin Rafael collects Mexican pottery from the "
                  "1950s."),
    ]
    got = cosine.check("Pottery made in Mexico in the 1950s is what the user's cousin Rafael collects.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "pottery"), got
    got = cosine.check("The user's cousin Rafael collects Peruvian pottery from the 1950s.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "pottery"), got
    assert got.matches[0].evidence == ["name: Mexican -> Peruvian"]


def test_a_unit_spelled_out_is_its_symbol(cosine: Probe) -> None:
    """"Sixty kilograms" says "60 kg": the words in common make the paraphrase a duplicate (related otherwise, at
    0.78 with four of seven words shared); another number of the same unit is an update."""
    memories = [
        Candidate("frame", "frame.md", "frame", "The user's road bike has a carbon frame and disc brakes."),
        Candidate("service", "service.md", "service", "The user's road bike was last serviced in March."),
        Candidate("load", "load.md", "load", "The user's cargo bike carries up to 60 kg of shopping."),
    ]
    for text in ("Groceries up to sixty kilograms fit in the box of the user's cargo bike.",
                 "Sixty kilograms of groceries is the load limit of the cargo bike the user owns."):
        got = cosine.check(text, memories)
        assert (got.verdict, got.matches[0].id) == ("duplicate", "load"), got
    got = cosine.check("The user's cargo bike carries up to 80 kilos of shopping.", memories)
    assert (got.verdict, got.matches[0].id) == ("update", "load"), got
    assert got.matches[0].evidence == ["number: 60 -> 80"]


def test_a_preference_is_an_order(cosine: Probe) -> None:
    """"Prioritises outage reports over billing questions" puts outage reports first: the other way round (with
    "over" or with "ahead of") is an update, a duplicate at 0.93 and more otherwise; the same order in other words
    is a duplicate."""
    memories = [
        Candidate("hours", "hours.md", "hours", "The support desk answers tickets from 8am to 6pm on weekdays."),
        Candidate("tool", "tool.md", "tool", "The support desk tracks its tickets in Zendesk."),
        Candidate("order", "order.md", "order", "The support desk prioritises outage reports over billing "
                  "questions."),
    ]
    for text in ("The support desk puts billing questions ahead of outage reports.",
                 "The support desk prioritises billing questions over outage reports."):
        got = cosine.check(text, memories)
        assert (got.verdict, got.matches[0].id) == ("update", "order"), got
        assert got.matches[0].evidence == ["comparison: the same comparative, the other way round"]
    for text in ("The support desk deals with outage reports before billing questions.",
                 "Outage reports come before billing questions at the support desk."):
        got = cosine.check(text, memories)
        assert (got.verdict, got.matches[0].id) == ("duplicate", "order"), got


def test_brief_and_detailed_are_short_and_long(cosine: Probe) -> None:
    """"Concise" and "brief" are the short sense of a text's length, "lengthy" and "detailed" the long one: opposed
    wherever they stand (a duplicate at 0.93 otherwise), and the same sense in other words is a duplicate."""
    memories = [
        Candidate("when", "when.md", "when", "The user's manager reads status updates on Monday mornings."),
        Candidate("where", "where.md", "where", "The user's manager is based in the Leeds office."),
        Candidate("summaries", "summaries.md", "summaries", "The user's manager wants incident summaries kept "
                  "concise, in plain prose."),
    ]
    for text in ("The user's manager wants lengthy incident summaries in plain prose.",
                 "The user's manager wants detailed incident summaries in plain prose."):
        got = cosine.check(text, memories)
        assert (got.verdict, got.matches[0].id) == ("update", "summaries"), got
        assert got.matches[0].evidence == ["opposite: short -> long"]
    got = cosine.check("In plain prose and brief: that is how the user's manager wants incident summaries.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "summaries"), got


def test_wordnet_antonyms_are_opposed(cosine: Probe) -> None:
    """WordNet's direct antonyms (data/antonyms.txt), in no hand-made list: "uppercase" in the place of "lowercase"
    (which embed at 0.90, as synonyms would) is a changed claim, and "unfriendly" said in other words too; the same
    sense in other words is still a duplicate."""
    memories = [
        Candidate("bikes", "bikes.md", "bikes", "The user's bikes hang on hooks in the garden shed."),
        Candidate("tags", "tags.md", "tags", "Release tags in the firmware repo start with the letter v."),
        Candidate("branches", "branches.md", "branches", "Branch names in the firmware repo are written in "
                  "lowercase, with hyphens between words."),
    ]
    got = cosine.check("Branch names in the firmware repo are written in uppercase, with hyphens between words.",
                       memories)
    assert (got.verdict, got.matches[0].id) == ("update", "branches"), got
    assert "word: lowercase -> uppercase" in got.matches[0].evidence
    got = cosine.check("In the firmware repo, branch names are lowercase and words are joined by hyphens.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "branches"), got
    memories[2] = Candidate("cat", "cat.md", "cat", "The neighbours' grey cat is friendly with visitors and lets "
                            "them stroke her.")
    got = cosine.check("The neighbours' grey cat is unfriendly to visitors; she hisses if anyone tries to stroke "
                       "her.", memories)
    assert (got.verdict, got.matches[0].id, got.matches[0].evidence) == \
        ("update", "cat", ["opposite: friendly -> unfriendly"]), got
    got = cosine.check("Visitors find the neighbours' grey cat friendly: she lets them stroke her.", memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "cat"), got


def test_values_of_other_things_in_digits_are_no_duplicate(cosine: Probe) -> None:
    """A text that gives a value in digits the memory does not give, where the memory gives one it does not, says
    something else of the same subject ("120 members" beside "17:00"): related, not a duplicate (at 0.79 with most
    words shared); a time or a month written another way ("5 p.m.", "2025-03") is still the same value."""
    memories = [
        Candidate("gates", "gates.md", "gates", "The user's running club meets at the park gates."),
        Candidate("fee", "fee.md", "fee", "The user's running club charges its members a yearly fee."),
        Candidate("long", "long.md", "long", "The user's running club does its long run every Saturday at 17:00, "
                  "starting in March 2025."),
    ]
    got = cosine.check("The user's running club does its long run on Saturdays and has 120 members.", memories)
    assert (got.verdict, got.matches[0].id) == ("related", "long"), got
    got = cosine.check("Every Saturday at 5 p.m. the user's running club does its long run, starting in 2025-03.",
                       memories)
    assert (got.verdict, got.matches[0].id) == ("duplicate", "long"), got


def test_a_related_add_lists_every_related_memory_best_first(cosine: Probe) -> None:
    got = cosine.check("Survey tablets need a charging cable in the field kit.", _candidates())
    assert got.verdict == "related"
    assert [m.id for m in got.matches][:2] == ["tablet-charge", "tablet-storage"]
    assert all(a.score >= b.score for a, b in zip(got.matches, got.matches[1:], strict=False))


def test_without_a_model_the_same_text_is_a_duplicate_and_a_changed_value_an_update() -> None:
    words = Probe(0.75)
    assert words.method == "exact"
    same = words.check("the API rate limit is 600 requests per minute, per token", _candidates())
    assert same.verdict == "duplicate" and same.matches[0].id == "rate-limit" and same.matches[0].method == "exact"
    changed = words.check("The API rate limit is 900 requests per minute per token.", _candidates())
    assert changed.verdict == "update" and changed.matches[0].id == "rate-limit"
    assert changed.matches[0].evidence == ["number: 600 -> 900"]
    assert words.check("The coffee machine is on the third floor.", _candidates()).verdict == "new"


@pytest.mark.parametrize(("old", "new", "said"), [
    ("Backups run at 2am UTC.", "Backups run at 02:00 UTC.", []),
    ("Logs are kept for 14 days.", "Logs are kept for two weeks.", []),
    ("Patches are applied within 48 hours.", "Patches are applied no later than two days after release.", []),
    ("Passwords rotate on the first day of every month.", "On the first of each month passwords rotate.", []),
    ("Branches are cut two weeks before launch.", "Branches are cut one week before launch.",
     ["number: 20160 min -> 10080 min"]),
    ("Maria is the product manager.", "Maria is no longer the product manager.",
     ['negation: "nolonger" only in the new text']),
    ("The auth module is reviewed by Alice.", "The auth module is reviewed by Bob.", ["name: Alice -> Bob"]),
    # a sentence's first word is capitalised whatever it is: another one there is a swapped word, not a name
    ("Alice reviews the auth module.", "Bob reviews the auth module.", ["word: alice -> bob"]),
    ("Quarterly security training is due in January.", "Everyone finishes the quarterly security training in "
     "January.", []),
    ("Builds run on iOS runners. GitHub hosts them.", "Builds run on iOS runners. GitLab hosts them.",
     ["name: GitHub -> GitLab"]),
    # "May" the month, "may" the verb; "at most" bounds a number
    ("The offsite is planned for September.", "The offsite is planned for May.", ["date: september -> may"]),
    ("Staff may work remotely on Fridays.", "Staff can work remotely on Fridays.", []),
    ("The pool allows at most 40 connections.", "Each service may open up to 40 connections from the pool.", []),
    # opposite words put in each other's place, small words and comparatives included; a comparison turned
    # around says the same
    ("The flag is turned on for internal users.", "The flag is turned off for internal users.",
     ["word: on -> off"]),
    ("The staging cluster is smaller than the production cluster.",
     "The staging cluster is larger than the production cluster.", ["word: smaller -> larger"]),
    ("The staging cluster is smaller than the production cluster.",
     "The production cluster is larger than the staging cluster.", []),
    # a "not" about something else denies that, not the memory
    ("The Web UI is still experimental.", "The Web UI does not support keyboard shortcuts yet.", []),
    # numbers written in words, shares, durations and ranks
    ("Uploads are capped at 25 MB per file.", "Each upload can be at most twenty-five megabytes.", []),
    ("Each dot stands for 250 words.", "Each dot stands for two hundred and fifty words.", []),
    ("The quota is 1200 requests a minute.", "The quota is one thousand two hundred requests a minute.", []),
    ("Results are cached for five minutes.", "Results are cached for 5 min.", []),
    ("Keys allow 500 requests per minute.", "Keys are rotated every ninety days.", []),
    ("The hackathon is on November 14.", "The hackathon is on the fourteenth of November.", []),
    ("The hackathon is on the 14th of November.", "The hackathon is on the 15th of November.", ["number: 14 -> 15"]),
    ("On its first run the tool asks about telemetry.", "Setting TELEMETRY=0 turns the tool's telemetry off.", []),
    ("Lost things are within reach 95% of the time.", "Lost things are rarely within reach.",
     ["quantifier: most -> few"]),
    ("Lost things are within reach 95% of the time.", "Ninety-five per cent of the time lost things are within reach.",
     []),
    # times and dates however written
    ("The stand-up is at 15:00.", "The stand-up is at 3 p.m.", []),
    ("The archive was last checked in April 2022.", "The archive was last checked in 2022-04.", []),
    ("Meetings before 13:00 are declined.", "Meetings before one o'clock in the afternoon are declined.", []),
    ("The backup starts at 2 pm.", "The backup starts at 14:00.", []),
    ("The shutdown runs from 03/08 to 14/08.", "The shutdown runs from 3 August until 14 August.", []),
    ("The contract runs until 31.01.2027.", "The contract runs until 31 January 2027.", []),
    ("The contract runs until 2027-01-31.", "The contract runs until 31 January 2027.", []),
    ("The contract runs until 31.01.2027.", "The contract runs until 31 March 2027.", ["date: january -> march"]),
    ("March is when the clusters are upgraded.", "May is when the clusters are upgraded.", ["date: march -> may"]),
    # names as written otherwise: a plural acronym, a name's adjective
    ("Footnote IDs can be numbers or words.", "A footnote's ID may be either a word or a number.", []),
    ("Nuvem Sul is our reseller in Brazil.", "Nuvem Sul is our Brazilian reseller.", []),
    # the same quantity in other words; a longer span of small words is still one swap
    ("Only a handful of customers call the SOAP API.", "Very few customers call the SOAP API.", []),
    ("Hotfix branches are named after their ticket and cut from the latest release tag.",
     "Hotfix branches are named after their ticket and cut from main.", ["word: the latest release tag -> main"]),
    # numbers that count different things are no change: a year and a version, a year and a rating, a time and
    # a count; and a denial beside a sentence about something else of the same subject is none either
    ("Python 3.9 support is dropped in January 2026.", "The SDK is tested against Python 3.9 to 3.13.", []),
    ("Bass on Top is a 1957 jazz album.", "I rated the album Bass on Top a 7.", []),
    ("The alert summary is posted at 08:00.", "The alert summary is kept under ten lines.", []),
    ("The alert summary is posted at 08:00.", "The alert summary is posted at 09:30.", ["number: 8 -> 30, 9"]),
    ("The status page is public and needs no login.", "The status page is updated by the incident commander "
     "within 15 minutes.", []),
    # negations written otherwise
    ("Packages are installed with pnpm, not npm.", "We install packages using pnpm rather than npm.", []),
    # a correction ("X, not Y") turns Y down as "rather than" does, and a number it turns down is not one it gives
    ("The `billing-export` job is maintained by Dara Okafor on the finance tools team.",
     "Kwame Mensah, not Dara Okafor, is the maintainer of the `billing-export` job.",
     ["negation: dara, okafor turned down in the new text"]),
    ("The quarterly review happens on 3 June in the Lisbon office.",
     "The quarterly review is on 10 June, not the 3rd; it is still in the Lisbon office.",
     ['negation: "not" only in the new text', "number: 3 -> 10"]),
    ("The meeting is on Tuesday.", "The meeting is on Tuesday, not because it suits us but because the room is free.",
     []),
    ("Force-pushing to release branches is forbidden.", "Nobody may force-push to release branches.", []),
    ("Pickup in Rotterdam is an hour earlier than in Lyon.", "Pickup in Lyon is an hour later than in Rotterdam.", []),
    ("Pickup in Rotterdam is an hour earlier than in Lyon.", "Pickup in Rotterdam is an hour later than in Lyon.",
     ["word: earlier -> later"]),
    ("Visual Studio Code allows custom CSS.", "VS Code allows custom CSS.", []),
    ("Employees may work remotely three days a week.", "Staff can work from home three days each week.", []),
    # a word put in another's place, the rest of the sentence the same
    ("Existing notes are listed in the sidebar.", "Existing notes are listed in the toolbar.",
     ["word: sidebar -> toolbar"]),
    ("The new laptops are faster than the old ones.", "The new laptops are slower than the old ones.",
     ["word: faster -> slower"]),
    ("Durable socks save you money.", "Durable socks cost you money.", ["word: save -> cost"]),
    # a word added, or the sentence reworded, is not a swap
    ("The logs are kept for 14 days.", "The application logs are kept for 14 days.", []),
    ("The free plan includes 5 projects.", "Users on the free plan get five projects.", []),
    ("Dendron can be used in a multi-vault configuration.", "You can use Dendron with multiple vaults.", []),
    # quantifiers: a closed class, compared as values
    ("All invoices are sent in euros.", "Only some invoices are sent in euros.", ["quantifier: all -> some"]),
    ("Of our customers, most pay annually.", "Of our customers, few pay annually.", ["quantifier: most -> few"]),
    ("Every invoice is sent in euros.", "Each invoice is sent in euros.", []),
    ("By default, both outgoing and incoming links are shown.", "By default, only outgoing links are shown.",
     ["quantifier: all -> some"]),
    # opposite senses said anywhere in the sentence, not only in each other's place
    ("Branch protection requires signed commits.", "Branch protection makes signed commits optional.",
     ["opposite: required -> optional"]),
    ("The bucket has versioning turned on.", "Versioning is turned off on the bucket.", ["opposite: on -> off"]),
    # a comparison: the same two things with the opposite comparative, or the other way round with the same one
    ("The new flat in Lisbon is larger than their old one in Porto.",
     "The new flat in Lisbon is smaller than the one they had in Porto.",
     ["comparison: the opposite comparative, the same way round"]),
    ("The Berlin warehouse ships more parcels per day than the one in Poznań.",
     "Poznań's warehouse sends out more parcels each day than Berlin's.",
     ["comparison: the same comparative, the other way round"]),
    ("The Graviton runners cost less per minute than the Intel ones.",
     "Per minute, the Intel runners are more expensive than the Graviton ones.", []),
    ("When you select more than one field, a table is shown.", "A table is shown when more than one field is "
     "selected.", []),
    # a denial moved from one clause to the other; a denial of a noun phrase in other words is the same
    ("The staging cluster is not backed up, because everything on it can be recreated from the seed scripts.",
     "The staging cluster is backed up every night, because its data can't be recreated from the seed scripts.",
     ["negation: back denied only in the existing memory, recreat only in the new text"]),
    ("Tags without a set colour get a generated one.", "Tags with no colour set get a generated colour.", []),
    ("The CLI prints plain text when `NO_COLOR` is set.", "When `NO_COLOR` is set, the CLI prints plain text.", []),
    # what was done, and is not now; but "is used to" says what a thing serves for
    ("Kemal handles the onboarding of new agents.", "Kemal used to onboard new agents, but the leads do it now.",
     ['negation: "nolonger" only in the new text']),
    ("Workspace accounts sign in to the portal.", "Workspace accounts can be used to sign in to the portal.", []),
    # two comparisons are told apart only in one measure; a time is later or sooner, longer or faster
    ("The commute by tram takes longer than cycling the same route.",
     "Cycling to work is quicker than taking the tram along the same route.", []),
    ("The commute by tram takes longer than cycling the same route.",
     "The tram gets to work sooner than cycling the same route does.",
     ["comparison: the opposite comparative, the same way round"]),
    ("In the pilot, the Swahili version of the survey took longer to complete than the English one.",
     "The pilot showed the Swahili survey was quicker to complete than the English version.",
     ["comparison: the opposite comparative, the same way round"]),
    # colours, a closed class as days and months are
    ("In the lab, sample tubes from the delta site have blue caps.",
     "The sample tubes from the delta site are the ones with red caps.", ["colour: blue -> red"]),
    # a value named verbatim (a #channel, an address, a path, `code`) put in another's place, the rest mostly the
    # same
    ("Freelancers send their invoices to accounts@lumenhaus.de.", "Freelancer invoices go to billing@lumenhaus.de.",
     ["value: accounts@lumenhaus.de -> billing@lumenhaus.de"]),
    ("Failed nightly backups are reported in the #infra-backups channel on Slack.",
     "Reports of failed nightly backups go to the #db-team channel on Slack.",
     ["value: #infra-backups -> #db-team"]),
    ("Failed nightly backups are reported in the #infra-backups channel on Slack.",
     "Reports of failed nightly backups go to the infra-backups channel on Slack.", []),
    ("Unit tests live in `.test.ts` files and run in Vitest.",
     "The `.spec.ts` files are integration tests that run against mocks of the editor's API.", []),
    # "was replaced" says what is no longer; more opposed senses; a name that ends another is the same name
    ("The onboarding videos are recorded in French.", "The French onboarding videos were replaced last year.",
     ['negation: "nolonger" only in the new text']),
    ("Kwame's driving licence is still valid.", "Kwame's driving licence has expired.", ["opposite: valid -> invalid"]),
    ("The user likes their coffee strong and black.", "The user wants weak, milky coffee.",
     ["opposite: strong -> weak"]),
    ("The runners have 16 vCPUs each.", "Each runner comes with sixteen CPUs.", []),
    # a name written in capitals is a name though it spells a small word; "a hundred" is one hundred; "a few" are
    # some; "retried" is "retries"
    ("Requests for new Slack channels are approved by the IT team.",
     "Requests for new Slack channels are approved by the People team.", ["name: IT -> People"]),
    ("The venue in Sintra holds up to 120 guests.", "The venue in Sintra holds up to a hundred and twenty guests.",
     []),
    ("Some of the records got warped in the attic.", "A few of the records were warped in the attic.", []),
    ("The worker retries failed jobs.", "Failed jobs are retried by the worker.", []),
    # what need not be done is optional, what has to be done is required
    ("Attending the review is optional for junior engineers.", "Junior engineers don't have to attend the review.",
     []),
    ("The front matter has to be at the top of the file.", "The front matter does not have to be at the top of the "
     "file.", ["opposite: required -> optional"]),
    ("Guests can join the calls without an account.", "An account is not needed for guests to join the calls.", []),
    # "files" is "file"'s plural, "workspaces" "workspace"'s
    ("Each workspace keeps its files.", "The workspaces keep each file.", []),
    # a negation denies within its clause: two clauses that each deny are a denial, not two that cancel
    ("Mira is on the lease, so she can sign for parcels.", "Mira isn't on the lease, so she can't sign for parcels.",
     ['negation: "isn\'t can\'t" only in the new text']),
    ("Mira isn't on the lease, so she can't sign for parcels.",
     "Since Mira is not on the lease, she cannot sign for parcels.", []),
    # "can't ... unless" says what is needed: it denies nothing; a fronted "unless" leaves the next clause's denial
    ("To sign a release, your GPG key must be on the keyserver.",
     "You can't sign a release unless your GPG key is on the keyserver.", []),
    ("Build logs are kept for a week.", "Unless a build fails, its logs aren't kept for a week.",
     ['negation: "aren\'t" only in the new text']),
    # a denial whose own sentence restates the claim turns it around, whatever the text goes on to say; a denial
    # in a sentence about something else does not
    ("The user's cat is allergic to chicken.", "The user's cat isn't allergic to chicken; the itching it had in "
     "spring turned out to be caused by fleas.", ['negation: "isn\'t" only in the new text']),
    ("The staging database is backed up.", "The staging database runs Postgres 16. It does not accept outside "
     "connections.", []),
    # a negation of something else leaves an opposed sense standing; one that denies the sense turns it around
    ("The user drinks strong tea and never adds sugar.", "The user never adds sugar to the weak tea they drink.",
     ["opposite: strong -> weak"]),
    ("The user drinks strong tea and never adds sugar.", "The user never adds sugar to the strong tea they drink.",
     []),
    ("Signed commits are not required on the docs branch.", "The docs branch makes signed commits optional.", []),
    ("Her blood pressure was high at the March check-up.", "At the March check-up her blood pressure was low.",
     ["opposite: high -> low"]),
    ("The flat's boiler is serviced early in the year.", "The boiler in the flat gets its service late in the year.",
     ["opposite: early -> late"]),
    ("The mortgage has a fixed rate.", "The mortgage rate is variable.", ["opposite: fixed -> variable"]),
    ("The user wants code reviews kept short.", "The user wants long, detailed code reviews.",
     ["opposite: short -> long"]),
    ("The legend sits at the top of the map.", "At the bottom of the map sits the legend.",
     ["opposite: top -> bottom"]),
    # "twice a day" counts times; "once the build passes" does not
    ("The cat is fed twice a day.", "The cat is fed once a day.", ["number: 2 -> 1"]),
    ("The cat is fed twice a day.", "The cat gets fed two times a day.", []),
    # a count is read with what it counts: the old number still said of something else hides no change
    ("The cat gets two treats twice a day.", "The cat gets two treats three times a day.", ["number: 2 -> 3"]),
    ("The team has 4 engineers and 2 designers.", "The team has 2 engineers and 2 designers.", ["number: 4 -> 2"]),
    ("The cat gets two treats twice a day.", "Twice a day the cat gets 2 treats.", []),
    ("Once the build passes, the image is pushed.", "The image is pushed when the build passes.", []),
    # "never" is how often; "at all" stresses a negation, it is no quantifier
    ("Ines never takes calls after 6pm.", "Ines sometimes takes a call after 6pm.",
     ['negation: "never" only in the existing memory', "quantifier: none -> some"]),
    ("Ines never takes calls after 6pm.", "Ines takes no calls at all after 6pm.", []),
    # an order is a comparison of times: turned around with "ahead of" for "before", or the same with "after"
    ("The lint step runs before the build.", "The build runs ahead of the lint step.",
     ["comparison: the same comparative, the other way round"]),
    ("The lint step runs before the build.", "The build runs after the lint step.", []),
    ("The nightly job starts thirty minutes before the backup.",
     "Half an hour ahead of the backup, the nightly job starts.", []),
    ("Each script is named after its hook.", "A hook's script takes the hook's name.", []),
    # "looks after" takes care of: no order of two things, and turned around in the passive it says the same
    ("The user's neighbour looks after the dog at weekends.",
     "At weekends the dog is looked after by the user's neighbour.", []),
    # "one of" is some of them, where the other said both or all; "each one of" is each
    ("Both of Ana's brothers work in Porto.", "Just one of Ana's brothers works in Porto.",
     ["quantifier: all -> some"]),
    ("Each one of the servers is patched.", "Every server is patched.", []),
    ("One of the two printers on the second floor is broken.",
     "Of the two printers on the second floor, one is broken.", []),
    # a value named verbatim is named whole: `ed` is not said inside `editor`
    ("The `editor` setting defaults to `vim`.", "The `editor` setting defaults to `ed`.", ["value: vim -> ed"]),
])
def test_values_are_read_as_values(old: str, new: str, said: list[str]) -> None:
    assert mismatches(Claim.of(old), Claim.of(new)) == said


def test_a_long_text_is_read_without_lining_its_words_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """A memory text is a stranger's input (an MCP argument, up to 20,000 characters): lining two texts up word by
    word takes time quadratic in their words (~21 s for two 10,000-word texts), so only texts of at most
    `_SWAP_WORDS` words are, and every other signal still reads a long one."""
    from vivary_git.memory.writes import claims

    seen: list[int] = []
    real = claims.SequenceMatcher

    def counting(junk: Any, a: Any, b: Any, autojunk: bool = True) -> Any:
        seen.append(max(len(a), len(b)))
        return real(junk, a, b, autojunk=autojunk)

    monkeypatch.setattr(claims, "SequenceMatcher", counting)
    long_old = "The runners are blue. " + "a/" * 9_990
    long_new = "The runners are red. " + "a/" * 9_990
    assert mismatches(Claim.of(long_old), Claim.of(long_new)) == ["colour: blue -> red"]
    assert seen == []
    assert mismatches(Claim.of("We buy laptops from one supplier."), Claim.of("We lease laptops from one supplier.")) \
        == ["word: buy -> lease"]
    assert seen and max(seen) <= claims._SWAP_WORDS
    # an address, a path, a code span: found once each, wherever they stand in a long run of their characters
    marks = Claim.of("x" * 5_000 + " billing@example.org `a.b` docs/a.md " + "a." * 5_000).marks
    assert {"billing@example.org", "a.b", "docs/a.md"} <= marks


def test_a_swap_of_words_that_mean_the_same_is_no_change() -> None:
    """The probe's embedding says whether two swapped spans mean the same; without it only the same stem does."""
    old, new = Claim.of("We buy laptops from one supplier."), Claim.of("We purchase laptops from one supplier.")
    assert mismatches(old, new) == ["word: buy -> purchase"]
    assert mismatches(old, new, lambda a, b: {a, b} == {"buy", "purchase"}) == []
    assert mismatches(old, new, lambda a, b: False) == ["word: buy -> purchase"]


def _pairs(path: Path = PAIRS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_labelled_pairs_are_varied_and_split() -> None:
    pairs = _pairs()
    assert len(pairs) >= 200
    labels = Counter(p["label"] for p in pairs)
    assert set(labels) == {"paraphrase", "contradiction", "related", "unrelated"} and min(labels.values()) >= 50
    kinds = Counter(p["kind"] for p in pairs if p["label"] == "contradiction")
    assert set(kinds) == {"negation", "number", "date", "name", "no longer"}
    assert {p["half"] for p in pairs} == {"tune", "test"} and len({p["b"] for p in pairs}) >= 190


@pytest.mark.parametrize("name", HELD_OUT)
def test_the_held_out_pairs_are_new_and_spread_over_the_kinds(name: str) -> None:
    at = HELD_OUT.index(name)
    held = _pairs(PAIRS.parent / name)
    seen = _pairs() + [p for earlier in HELD_OUT[:at] for p in _pairs(PAIRS.parent / earlier)]
    assert {p["half"] for p in held} == {name.removeprefix("probe_").removesuffix(".jsonl")}
    groups = sorted({p["group"] for p in held})
    assert groups == list(range(len(groups))) and len(groups) >= 40 and len(held) >= 192
    assert all(Counter(p["label"] for p in held if p["group"] == g) == Counter(
        {"paraphrase": 1, "contradiction": 1, "related": 1, "unrelated": 1}) for g in groups)
    kinds = Counter(p["kind"] for p in held if p["label"] == "contradiction")
    assert set(kinds) == {"negation", "number", "date", "name", "no longer", "substitution", "antonym",
                          "comparison", "quantifier"} and min(kinds.values()) >= 4
    # no fact, and no new text but the unrelated pairs' (other groups' facts), comes from an earlier set
    assert not {p["a"] for p in held} & ({p["a"] for p in seen} | {p["b"] for p in seen})
    assert not {p["b"] for p in held if p["label"] != "unrelated"} & {p["b"] for p in seen}
    assert "agent" in {p["source"] for p in held} <= {"agent", "foam-docs", "dendron-vault", "kepano-obsidian"}


def _rates(cosine: Probe, pairs: list[dict[str, Any]]) -> tuple[float, float, float]:
    """bench/bench_probe.py's figures over `pairs`, each pair's memory among three others: duplicates caught,
    contradictions refused as duplicates, new facts refused."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_probe", Path(__file__).parents[1] / "bench" / "bench_probe.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    got: Counter[tuple[str, str]] = Counter()
    for p in pairs:
        existing = bench._existing(pairs, p)
        assert existing[0][1] != p["a"]
        verdict = cosine.check(p["b"], [Candidate(i, i, i, t) for i, t in existing])
        named = verdict.top.id if verdict.top is not None else None
        ok_target = verdict.verdict not in ("duplicate", "update") or named == f"g{p['group']}"
        got[(p["label"], verdict.verdict if ok_target else "other")] += 1
    count = Counter(p["label"] for p in pairs)
    refused = sum(got[(lab, v)] for lab in ("related", "unrelated") for v in ("duplicate", "update", "other"))
    return (got[("paraphrase", "duplicate")] / count["paraphrase"],
            (got[("contradiction", "duplicate")] + got[("contradiction", "other")]) / count["contradiction"],
            refused / (count["related"] + count["unrelated"]))


def test_the_labelled_pairs_meet_the_goals(cosine: Probe) -> None:
    """The tune and test halves, on which the probe was built."""
    caught, as_duplicates, refused = _rates(cosine, _pairs())
    assert caught >= 0.90 and as_duplicates <= 0.05 and refused <= 0.02, (caught, as_duplicates, refused)


# The goals (duplicates caught, contradictions refused as duplicates, new facts refused). Each held-out set was
# measured once when it was new (docs/remember.md has those figures), then read and the probe improved on its
# misses; holdout11 is not read yet (it was measured twice, on two probes, with the same figures), nor is holdout14.
# A set that misses a goal has today's figure for that goal as its bound: no change may do worse. (Here a
# contradiction refused naming another memory counts with those refused as duplicates: holdout11's 0.115 is
# bench_probe's 0.096 plus its one "update(other)".)
GOALS = (0.90, 0.05, 0.02)
BELOW_GOAL = {"probe_holdout5.jsonl": (0.865, 0.019, 0.019), "probe_holdout6.jsonl": (0.923, 0.0, 0.029),
              "probe_holdout8.jsonl": (0.923, 0.038, 0.010), "probe_holdout9.jsonl": (0.942, 0.038, 0.029),
              "probe_holdout10.jsonl": (0.885, 0.115, 0.0), "probe_holdout11.jsonl": (0.885, 0.115, 0.010),
              "probe_holdout12.jsonl": (0.942, 0.096, 0.087), "probe_holdout13.jsonl": (0.962, 0.038, 0.010),
              "probe_holdout14.jsonl": (0.923, 0.019, 0.029), "probe_holdout15.jsonl": (0.923, 0.058, 0.010),
              "probe_holdout16.jsonl": (0.885, 0.077, 0.038),
              "probe_holdout17.jsonl": (0.846, 0.212, 0.0), "probe_holdout18.jsonl": (0.865, 0.096, 0.0),
              "probe_holdout19.jsonl": (0.885, 0.269, 0.058)}


@pytest.mark.parametrize("name", HELD_OUT)
def test_the_held_out_pairs_do_no_worse_than_measured(cosine: Probe, name: str) -> None:
    """The held-out sets, never tuned on before their measurement, meet the goals or do no worse than today."""
    caught, as_duplicates, refused = _rates(cosine, _pairs(PAIRS.parent / name))
    today = BELOW_GOAL.get(name, GOALS)
    bound = (min(GOALS[0], today[0]), max(GOALS[1], today[1]), max(GOALS[2], today[2]))
    assert caught >= bound[0] - 0.005 and as_duplicates <= bound[1] + 0.005 and refused <= bound[2] + 0.005, \
        (caught, as_duplicates, refused)


def _local(repo: Repo, cli: Any) -> None:
    pytest.importorskip("hnswlib", reason="the embed extra is not installed")
    repo.commit("init", {".vivary/memory.toml": LOCAL, "notes/home.md": "# Home\n"})
    for _, text in EXISTING:
        assert cli("remember", text, cwd=repo.path).code == 0


def test_remember_refuses_an_update_and_supersedes_in_one_commit(repo: Repo, cli: Any) -> None:
    _local(repo, cli)
    head = repo.git("rev-parse", "HEAD").strip()
    r = cli("remember", "The API rate limit is 1200 requests per minute per token.", "--json", cwd=repo.path)
    assert r.code == 3
    got = r.json()
    old = "memories/the-api-rate-limit-is-600-requests-per-minute-per-token"
    assert got["ok"] is False and got["verdict"] == "update" and "duplicate" not in got
    assert got["matches"][0]["id"] == old and got["matches"][0]["evidence"] == ["number: 600 -> 1200"]
    assert f"update {old} instead" in got["message"]
    assert repo.git("rev-parse", "HEAD").strip() == head

    r = cli("remember", "The API rate limit is 1200 requests per minute per token.", "--supersede", "--json",
            cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["verdict"] == "update" and got["archived"] == [old]
    assert {"from": got["id"], "field": "supersedes", "to": old} in got["links"]
    assert repo.git("rev-parse", "HEAD~1").strip() == head  # one commit, both notes
    assert sorted(repo.git("diff", "--name-only", "HEAD~1", "HEAD").split()) == sorted([got["path"], f"{old}.md"])
    message = repo.git("log", "-1", "--format=%B")
    trailers = subprocess.run(["git", "interpret-trailers", "--parse"], input=message, capture_output=True,
                              text=True, check=True).stdout
    assert f"Vivary-Supersedes: {old}\n" in trailers and "Vivary-Op: add\n" in trailers
    assert "archived: " in (repo.path / f"{old}.md").read_text()
    edges = cli("graph", "--json", cwd=repo.path).json()["edges"]
    assert {"from": got["id"], "field": "supersedes", "to": old, "broken": False} in edges
    assert cli("check", cwd=repo.path).code == 0
    # the archived memory is no longer what an add is compared with: the old claim is new again
    again = cli("remember", "The API rate limit is 600 requests per minute per token.", "--json", cwd=repo.path)
    assert again.json()["verdict"] == "update" and again.json()["matches"][0]["id"] == got["id"]


def test_a_related_add_is_linked_to_the_related_memories(repo: Repo, cli: Any) -> None:
    _local(repo, cli)
    r = cli("remember", "The survey tablets need a charging cable in the field kit.", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["verdict"] == "related"
    linked = [e["to"] for e in got["links"] if e["field"] == "related"]
    assert linked and linked[0].startswith("memories/survey-tablets-must-be-fully-charged")
    assert linked == [m["id"] for m in got["matches"]][:len(linked)]
    text = (repo.path / got["path"]).read_text()
    assert "related: [" in text and cli("check", cwd=repo.path).code == 0


@pytest.mark.parametrize("planted", ["fifo", "link"])
def test_a_fifo_or_a_link_in_the_vector_caches_place_is_left_off(repo: Repo, cli: Any, planted: str) -> None:
    """The probe's vector cache under `.git/vivary/probe-v2/` was read with `is_file()` and `read_bytes()`: through a
    symbolic link (here to a copy of the cache outside the Git folder), and a FIFO swapped in between the two would
    block the add forever. Neither is read nor written now: the add goes ahead without the cache, saying so once.
    The timeout only turns a hang into a failure."""
    pytest.importorskip("hnswlib", reason="the embed extra is not installed")
    repo.commit("init", {".vivary/memory.toml": LOCAL, "notes/home.md": "# Home\n"})
    for _, text in EXISTING[:2]:
        assert cli("remember", text, cwd=repo.path).code == 0
    (cache,) = (repo.path / ".git" / "vivary" / "probe-v2").glob("*.msgpack")
    outside = repo.path.parent / "vectors.msgpack"
    outside.write_bytes(cache.read_bytes())
    cache.unlink()
    if planted == "fifo":
        os.mkfifo(cache)
    else:
        cache.symlink_to(outside)
    r = subprocess.run([sys.executable, "-m", "vivary_git.main", "remember", EXISTING[2][1]], cwd=repo.path,
                       capture_output=True, text=True, timeout=600, check=False)
    assert r.returncode == 0, r.stderr
    kind = "a FIFO (named pipe)" if planted == "fifo" else "a symbolic link"
    assert r.stderr == (f"vivary: the probe's vector cache {cache} is {kind}, not a regular file; continuing without "
                        "it (remove it to have it rebuilt)\n")
    assert r.stdout.startswith("remembered memories/requests-over-the-api-rate-limit")
    assert cache.is_fifo() if planted == "fifo" else os.readlink(cache) == str(outside)  # left as it was
    cache.unlink()  # the fix the message names: the next add writes the cache again
    assert cli("remember", EXISTING[3][1], cwd=repo.path).code == 0
    assert cache.is_file() and not cache.is_symlink()


def test_digits_that_int_cannot_read_are_no_crash_of_remember(repo: Repo, cli: Any) -> None:
    # `²²²²` is a digit string to str.isdigit() and not to int(): a claim naming it ended remember's probe in a
    # ValueError traceback, for a memory an agent wrote or a note beside it.
    for text in ("We had ²²²² visitors.", "In ²⁰²⁴ we moved.", "We had ٢٠٢٤ visitors."):
        Claim.of(text)
    assert ("٢٠٢٤", "year") in Claim.of("In ٢٠٢٤ we moved.").kinds  # a decimal digit of another script is a digit
    _local(repo, cli)
    r = cli("remember", "The API rate limit is ²²²² requests per minute per token.", "--json", cwd=repo.path)
    assert r.code in (0, 3) and "Traceback" not in r.err, r.err
    assert r.json()["ok"] in (True, False)
