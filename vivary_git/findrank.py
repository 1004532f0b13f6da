"""How `find` orders what `query` finds (docs/find.md): by BM25F over the candidates' five sources.

`query` scores as the contract says (docs/query.md): every hit of a term in a source counts, however
long the source. A page that lists many notes (a hub, an index, a list of recipes) then outscores the
note a question is about: on one vault "which plugins help with spaced repetition flashcards" put the
hub `🗂️ Plugins` first and `Spaced Repetition Plugins` fifth. `find` hands an agent a few notes, so it
asks `query` for a larger pool (its filters and privacy boundary applied, so every note in the pool may
be shown and nothing else is read) and orders the pool by BM25F:

- per source, a term's hits are weighted (`WEIGHTS`: the ID and title count most) and divided by how
  long that source is against the pool's mean (`B`), so a hit in a long page counts less;
- the weighted sum saturates (`K1`): a tenth hit adds little to a note that has nine;
- each term counts by how rare it is in the pool (inverse document frequency): a question's rare words
  (`repetition`) decide more than its common ones (`plugins`);
- a term in the ID or title counts once more (`TITLED`);
- English function words (`did`, `with`, `my`: `FUNCTION_WORDS`) are left out of the question, as
  `query` leaves out its stopwords;
- a note the question names (its title, file name, id or an alias, compared as titlematch.py compares
  them) comes first: in any script, what the words' scores say of it.

Everything is computed from the pool alone (public notes, their public edges), so a private note
changes no public note's place, as in `query`. Ties keep `query`'s order (score, path, ID).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence

from vivary_git.models import Edge, Node, Note
from vivary_git.searchindex import node_sources
from vivary_git.textsearch import fold, word_counts
from vivary_git.titlematch import first, key, names_of

# Per source, in `query.SOURCES` order (id+title, frontmatter, path, body, edge text): a hit's weight, and
# how much the source's length normalises it (0: not at all, 1: fully).
WEIGHTS = (4.0, 1.5, 1.0, 1.0, 0.5)
B = (0.5, 0.75, 0.5, 0.75, 0.75)
K1 = 1.2
# A term in the ID or title counts once more, whole: a note whose title holds the question's words is
# about them, where a page that only lists that note mentions them (saturation alone let many mentions
# in a long body come close to one in a title).
TITLED = 1.0
POOL = 50  # at least this many of `query`'s best are ordered again (8 per result asked for, if more)
# English function words, besides `query.STOPWORDS`: a question's `did`, `with` or `my` is rare in a small
# pool, and rarity would make it count as much as the words the question is about.
FUNCTION_WORDS = frozenset((
    "about", "above", "after", "again", "against", "all", "am", "any", "because", "been", "before", "being", "below",
    "between", "both", "but", "can", "could", "did", "doing", "down", "during", "each", "few", "further", "had",
    "has", "have", "having", "he", "her", "here", "hers", "herself", "him", "himself", "his", "into", "its",
    "itself", "just", "me", "more", "most", "my", "myself", "no", "nor", "not", "now", "off", "once", "only",
    "other", "ours", "ourselves", "out", "over", "own", "same", "she", "should", "so", "some", "such", "than",
    "that", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "those", "through", "too",
    "under", "until", "up", "very", "was", "were", "when", "while", "whom", "will", "with", "would", "you", "your",
    "yours", "yourself",
))


def pool_size(k: int) -> int:
    """How many of `query`'s best `find` orders again for `k` results."""
    return max(POOL, 8 * k)


def order(nodes: Sequence[Node], notes: Mapping[str, Note], edges: Sequence[Sequence[Edge]],
          terms: Sequence[str], asked: str = "") -> list[int]:
    """Positions of `nodes` (`query`'s order, each with its public outbound `edges`) best first for the
    query `terms` (`query.terms_of`: repeated terms count each time); the notes the question `asked` names
    first."""
    weights = Counter(t for t in terms if t not in FUNCTION_WORDS) or Counter(terms)
    counts: list[list[Counter[str]]] = []
    lengths: list[list[int]] = []
    for node, out in zip(nodes, edges, strict=True):
        folded = [fold(s) for s in node_sources(node, notes[node.blob], out)]
        counts.append([_counts(text, weights) for text in folded])
        lengths.append([len(text) for text in folded])
    n = len(nodes)
    if n == 0:
        return []
    mean = [max(sum(ls[s] for ls in lengths) / n, 1.0) for s in range(len(WEIGHTS))]
    df = {t: sum(1 for doc in counts if any(src[t] for src in doc)) for t in weights}
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in weights}
    scores: list[float] = []
    for doc, ls in zip(counts, lengths, strict=True):
        score = 0.0
        for t, times in weights.items():
            tf = sum(WEIGHTS[s] * doc[s][t] / (1 - B[s] + B[s] * ls[s] / mean[s]) for s in range(len(WEIGHTS)))
            if tf:
                score += times * idf[t] * (tf / (K1 + tf) + (TITLED if doc[0][t] else 0.0))
        scores.append(score)
    ranked = sorted(range(n), key=lambda i: (-scores[i], i))
    wanted = key(asked)
    if not wanted:
        return ranked
    return first(ranked, (i for i, node in enumerate(nodes)
                          if wanted in names_of(node.id, node.path, node.title, notes[node.blob].fields)))


def _counts(text: str, weights: Mapping[str, int]) -> Counter[str]:
    """How often each query term is a word of `text` (folded)."""
    if not any(t in text for t in weights):
        return Counter()
    found = word_counts(text)
    return Counter({t: found[t] for t in weights if found[t]})
