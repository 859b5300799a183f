"""Anchor words: the words the prefilter of :mod:`triage.ingest.matcher` looks for.

Each literal signature gets an *anchor word*: a word of its normalised text
outside quotes and placeholders, at least four characters long and not a
stop word.  The best-ranked word is taken, ranked by: code-like words first
(snake_case, CamelCase, with digits, ALLCAPS: ``BlobNotFound``,
``SIGABRT``), words frequent in ordinary CI output last (``error``,
``model``, ``already``, ...); then the fewest signatures sharing it; then
the longest.  A second anchor is added only when it is code-like and
(nearly) unique to the signature: an anchor that ordinary log lines contain
would make the prefilter pass them all.
"""

from __future__ import annotations

from triage.ingest.normalise import readable, words

__all__ = ["ANCHORS_PER_SIGNATURE", "STOP", "anchor_candidates", "choose_anchors", "identifier_words"]

#: Up to this many anchor words per literal signature.
ANCHORS_PER_SIGNATURE = 2

#: Words never taken as anchors (nor in the ids of drafts).
STOP = frozenset(
    """about after also been before being between both cannot could does doing down during each from have
    having here into just more most must only other over same should some such than that their them then there
    these they this those through under until very were what when where which while will with would your""".split()
)
#: Words too common in CI logs to make a good anchor: used only when a
#: signature has nothing better.  (Any word that is frequent in ordinary log
#: lines makes the prefilter pass those lines; the list names the usual ones.)
_COMMON = frozenset(
    """error errors exception exceptions warning warnings info debug fatal failed fail failure failures
    traceback recent call last file line python model models server request requests response process
    value values none null true false self main test tests cuda torch time data input output rank worker
    node status code exit already using used found loading loaded load start started starting finished
    done complete completed total size number version install installed installing requirement satisfied
    build building running expected unexpected argument arguments keyword invalid unable please check
    deprecated default instead token tokens batch memory device kernel launch shape type dtype object
    function module import return config param params mode path name result results step steps
    epoch count length index item items list dict string float int tensor tensors thread threads
    while with from into http https local host port address client connection valueerror runtimeerror
    typeerror keyerror indexerror attributeerror assertionerror oserror ioerror importerror
    notimplementederror modulenotfounderror connectionerror timeouterror""".split()
)


def identifier_words(text: str) -> set[str]:
    """Words of a signature that look like code, lower-cased: snake_case,
    CamelCase, with digits, or ALLCAPS.  They rarely occur by chance."""
    out = set()
    for w in words(readable(text), quoted=False):
        if (
            "_" in w.strip("_")
            or any(ch.isdigit() for ch in w)
            or (w[1:] != w[1:].lower() and w != w.upper())
            or (len(w) >= 4 and w.isupper())
        ):
            out.add(w.lower())
    return out


def anchor_candidates(norm: str) -> list[str]:
    """Words that may anchor a signature; which ones is decided later."""
    seen: dict[str, None] = {}
    for w in words(norm, quoted=False):
        if len(w) >= 4 and w not in STOP:
            seen.setdefault(w)
    if not seen:  # short signatures: "OOM", "Killed by OS"
        for w in words(norm, quoted=False):
            if len(w) >= 2:
                seen.setdefault(w)
    if not seen:  # only quoted text: "'nccl'"
        for w in words(norm, quoted=True):
            if len(w) >= 2:
                seen.setdefault(w)
    return list(seen)


def choose_anchors(cands: list[list[str]], idents: list[set[str]]) -> list[list[str]]:
    """Pick each signature's anchor words.

    Ranked by: code-like words first, common log words last; then the fewest
    signatures sharing the word; then the longest.  The best one is always
    taken; a second one only when it is code-like and (nearly) unique to the
    signature, so that extra anchors never let ordinary lines through.
    """
    df: dict[str, int] = {}
    for words in cands:
        for w in words:
            df[w] = df.get(w, 0) + 1
    chosen = []
    for words, ident in zip(cands, idents):

        def tier(w: str) -> int:
            return 0 if w in ident and w not in _COMMON else (2 if w in _COMMON else 1)

        ranked = sorted(range(len(words)), key=lambda i: (tier(words[i]), df[words[i]], -len(words[i]), i))
        picks = [words[ranked[0]]]
        for i in ranked[1:ANCHORS_PER_SIGNATURE]:
            w = words[i]
            if tier(w) == 0 and df[w] <= 2:
                picks.append(w)
        chosen.append(picks)
    return chosen

