"""The offline embedding function: passages embedded from their opening tokens, identity and config."""

from __future__ import annotations

import numpy as np

from knowledge.embeddings import PASSAGE_TOKENS, MultilingualE5EmbeddingFunction

LONG = (
    "The KV cache grows with the context length and with every concurrent user. "
    + "Each extra conversation keeps its own keys and values for every layer of the model. " * 12
)


def test_a_long_passage_is_embedded_from_its_opening_words() -> None:
    cut = MultilingualE5EmbeddingFunction()
    whole = MultilingualE5EmbeddingFunction(passage_tokens=None)
    model = cut._loaded()
    opening = cut._opening(model, LONG)
    assert LONG.startswith(opening) and opening != LONG
    assert model.token_count(opening) <= PASSAGE_TOKENS
    # The longest run of whole words that fits: one more word would not.
    next_words = " ".join(LONG.split(" ")[: len(opening.split(" ")) + 1])
    assert model.token_count(next_words) > PASSAGE_TOKENS
    [vector] = cut([LONG])
    np.testing.assert_allclose(vector, whole([opening])[0], atol=1e-6)
    assert not np.allclose(vector, whole([LONG])[0], atol=1e-3)


def test_a_short_passage_is_embedded_whole() -> None:
    short = "At 16 bits every parameter takes two bytes."
    cut = MultilingualE5EmbeddingFunction()
    assert cut._opening(cut._loaded(), short) == short
    np.testing.assert_allclose(
        cut([short])[0], MultilingualE5EmbeddingFunction(passage_tokens=None)([short])[0]
    )


def test_identity_and_config_name_the_cut_so_vectors_are_never_mixed() -> None:
    cut, whole = MultilingualE5EmbeddingFunction(), MultilingualE5EmbeddingFunction(passage_tokens=None)
    assert cut.identity.endswith(f":first-{PASSAGE_TOKENS}-tokens") and cut.identity != whole.identity
    rebuilt = MultilingualE5EmbeddingFunction.build_from_config(cut.get_config())
    assert rebuilt.identity == cut.identity
    # A collection configured before passages were cut gets whole passages back, as it was built.
    assert MultilingualE5EmbeddingFunction.build_from_config({"variant": "original"}).passage_tokens is None
