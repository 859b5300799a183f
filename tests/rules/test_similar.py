"""Similar hypotheses across investigations (pure: no database)."""

from __future__ import annotations

from types import SimpleNamespace

from triage.rules.next.similar import Decision, KnownHypothesis, find_similar, similarity


def known(id_: str, title: str, text: str = "", status: str = "open", pr: int = 2) -> KnownHypothesis:
    return KnownHypothesis("other", "o/r", pr, id_, title, text, status,
                           (Decision("probe", "revert it", "predicts:probe", "confirms", "came back"),))


def ours(id_: str, title: str, text: str = "") -> SimpleNamespace:
    return SimpleNamespace(id=id_, title=title, text=text)


def test_the_closest_hypothesis_ranks_first_and_unrelated_ones_are_left_out():
    others = [known("rocm", "ROCm changes in the v0.5.16 image"), known("aiter", "aiter changes in the v0.5.16 image"),
              known("tok", "Tokenizer config"), known("page", "The KV cache page size")]
    matches = find_similar([ours("image-aiter", "aiter changes in the v0.5.14 image")], others)
    assert [m.other.id for m in matches] == ["aiter", "rocm"]
    assert matches[0].score > matches[1].score >= 70
    assert matches[0].other.decided_by[0].recipe == "probe"


def test_stop_words_do_not_make_titles_alike():
    # "the … in the … of the" is shared; nothing that matters is
    assert similarity("The page size of the cache", "", "The tokenizer in the config", "") < 50
    assert similarity("KV page size", "", "The KV cache page size", "") >= 80


def test_text_counts_when_both_sides_have_it_and_the_threshold_holds():
    a = ours("h", "Decode kernel", "the absorbed MLA decode kernel reads transferred KV wrongly")
    b = known("k", "Attention kernel bug", "absorbed MLA decode kernel reads the transferred KV wrongly")
    assert find_similar([a], [b], threshold=99) == []
    (m,) = find_similar([a], [b])
    assert m.hypothesis == "h" and m.score >= 80
