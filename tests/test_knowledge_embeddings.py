"""The offline embedding function: passages embedded from their opening tokens, identity and config."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from knowledge.embeddings import PASSAGE_TOKENS, MultilingualE5EmbeddingFunction, _usable_cores
from tests.sizing_cli import run_python

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


def test_threads_respect_the_container_quota_and_omp_num_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    unlimited = tmp_path / "unlimited"
    unlimited.mkdir()
    assert _usable_cores(unlimited) == 64  # no cgroup files: the affinity decides
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("200000 100000\n")
    assert _usable_cores(v2) == 2  # a pod limited to 2 CPUs on a 64-core node
    (v2 / "cpu.max").write_text("50000 100000\n")
    assert _usable_cores(v2) == 1  # half a CPU still runs one thread
    (v2 / "cpu.max").write_text("max 100000\n")
    assert _usable_cores(v2) == 64
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("400000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert _usable_cores(v1) == 4
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")  # v1's "unlimited"
    assert _usable_cores(v1) == 64
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what the Docker image sets
    assert _usable_cores(unlimited) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert _usable_cores(unlimited) == 64


@pytest.mark.parametrize(("preset", "expected"), [(None, "1000"), ("5000", "5000")])
def test_openmp_spin_is_short_unless_the_operator_chose_one(preset: str | None, expected: str) -> None:
    env = {key: value for key, value in os.environ.items() if key != "GOMP_SPINCOUNT"}
    if preset:
        env["GOMP_SPINCOUNT"] = preset
    code = (
        "import os; from knowledge.embeddings import MultilingualE5EmbeddingFunction as E; "
        "assert 'GOMP_SPINCOUNT' not in os.environ or os.environ['GOMP_SPINCOUNT'] == '5000'; "
        "E()._loaded(); print(os.environ['GOMP_SPINCOUNT'])"
    )
    done = run_python(code, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected
