"""How `git vivary index` embeds: vectors that are a function of the text alone, whatever the batches, windows
or order; tokenising beside the model; progress on a terminal, and elsewhere a line every 10 s and a summary; Ctrl-C
ending a run at once and keeping what it made. Real model, real Git."""

from __future__ import annotations

import importlib.util
import io
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from vivary_git import open_workspace
from vivary_git.commands.index import EmbedProgress
from vivary_git.memory.local import files, index
from vivary_git.memory.local.embed import EmbedderError, embedder_status, load_embedder
from vivary_git.memory.local.files import embed_text
from vivary_git.memory.local.index import embed_pending
from vivary_git.memory.local.provider import LocalMemory
from vivary_git.memory.local.vectors import roundtrip
from vivary_git.memory.snapshot import packets

pytestmark = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None,
    reason="needs the [embed] extra",
)

MEMORY = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
TROPO = 'version = 1\n\n[base]\nderive = ["id", "title"]\nallow_untyped = true\n'
TOPICS = ["key rotation", "sourdough", "tomatoes", "the vault service", "release notes", "graph memory"]


def note(i: int) -> str:
    # Lengths from a few tokens to past the model's 256-token cut, so runs pad and windows differ.
    words = " ".join(f"{TOPICS[i % len(TOPICS)]} detail{j}" for j in range(1 + (i * 7) % 40))
    return f"# Note {i}\n\n{words}\n" + ("tail words " * 300 if i % 9 == 0 else "")


def write_notes(repo: Any, names: list[str]) -> None:
    repo.write({"tropo.toml": TROPO, ".vivary/memory.toml": MEMORY,
                **{f"notes/{name}.md": note(int(name.rsplit("-", 1)[1])) for name in names}})
    repo.git("add", "-A")
    repo.git("commit", "-qm", "notes")


def vectors_by_text(path: Path) -> dict[str, Any]:
    """Each indexed note's embedded text -> its vector in the state's vector cache."""
    import numpy as np

    mem = LocalMemory(open_workspace(path))
    store = mem.store
    meta: files.VectorMeta = files._decode(store.get(files.VECTOR_META), files.VectorMeta)
    raw = store.get(files.VECTORS)
    assert meta is not None and raw is not None
    rows = np.frombuffer(raw, dtype="<f4").reshape(len(meta.digests), meta.dim)
    row_of = {d: i for i, d in enumerate(meta.digests)}
    ws = open_workspace(path)
    return {embed_text(p): rows[row_of[files._digest(p)]] for _, p in packets(ws, LocalMemory(ws).snapshot())}


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    # Windows of a few notes, so a small workspace crosses several (the real ones hold 64, then 512).
    monkeypatch.setattr(index, "_FIRST_WINDOW", 3)
    monkeypatch.setattr(index, "_WINDOW", 7)


def test_index_vectors_are_each_texts_own(repo: Any, cli: Any, small_windows: None) -> None:
    import numpy as np

    write_notes(repo, [f"n-{i}" for i in range(16)])
    assert cli("index", "--yes", cwd=repo.path).code == 0
    indexed = vectors_by_text(repo.path)
    embedder = load_embedder()
    texts = sorted(indexed)
    # Stored as every clone stores them: the int8 round trip of the text's own vector (memory/local/vectors.py).
    alone = roundtrip(np.vstack([embedder.embed([t]) for t in texts]))
    assert np.abs(np.vstack([indexed[t] for t in texts]) - alone).max() < 1e-5


def test_a_notes_vector_does_not_depend_on_the_order_it_is_indexed_in(repo: Any, cli: Any, tmp_path: Path,
                                                                       small_windows: None) -> None:
    import numpy as np

    # All at once, in id order...
    write_notes(repo, [f"n-{i}" for i in range(20)])
    assert cli("index", "--yes", cwd=repo.path).code == 0
    at_once = vectors_by_text(repo.path)

    # ...in the opposite id order (the same texts under names that sort the other way), in other windows...
    other = tmp_path / "other"
    other.mkdir()
    from conftest import Repo, git

    git(other, "init", "-q", "-b", "main")
    reverse = Repo(other)
    write_notes(reverse, [f"{chr(ord('z') - i)}-{i}" for i in range(20)])
    assert cli("index", "--yes", cwd=other).code == 0
    reversed_order = vectors_by_text(other)

    # ...and a few at a time, as edits arrive (each run embeds only the new ones, in small runs).
    assert cli("forget", "--yes", cwd=repo.path).code == 0
    for i in range(20):
        repo.git("rm", "-q", f"notes/n-{i}.md")
    repo.git("commit", "-qm", "empty")
    for stop in (7, 20):
        write_notes(repo, [f"n-{i}" for i in range(stop)])
        assert cli("index", "--yes", cwd=repo.path).code == 0
    in_steps = vectors_by_text(repo.path)

    assert at_once.keys() == reversed_order.keys() == in_steps.keys()
    for text, vector in at_once.items():
        assert np.abs(reversed_order[text] - vector).max() < 1e-5
        assert np.abs(in_steps[text] - vector).max() < 1e-5


def test_an_index_embeds_only_with_the_graph_index_yes_loads(repo: Any, cli: Any) -> None:
    # The model without graph optimisation (recall's, for queries) gives the same vectors to ~2e-7, not the same
    # bits: after the int8 round trip about 1 note in 120 stores another code than `index --yes` stores. So a
    # model handed to an index run (the MCP server's write-through) must be the optimised one, or it is refused
    # before anything is written; the optimised one writes what `index --yes` writes, bit for bit.
    import numpy as np

    write_notes(repo, [f"n-{i}" for i in range(5)])
    with pytest.raises(EmbedderError, match="without graph optimisation"):
        LocalMemory(open_workspace(repo.path)).index(approved=True, embedder=load_embedder(optimize=False))
    assert LocalMemory(open_workspace(repo.path)).manifest() is None
    LocalMemory(open_workspace(repo.path)).index(approved=True, embedder=load_embedder())
    handed = vectors_by_text(repo.path)
    assert cli("forget", "--yes", cwd=repo.path).code == 0
    assert cli("index", "--yes", cwd=repo.path).code == 0
    own = vectors_by_text(repo.path)
    assert handed.keys() == own.keys() and len(own) == 5
    assert all(np.array_equal(handed[text], own[text]) for text in own)


def test_embed_pending_reports_progress_and_checkpoints(monkeypatch: pytest.MonkeyPatch,
                                                       small_windows: None) -> None:
    import numpy as np

    monkeypatch.setattr(index, "_CHECKPOINT_SECONDS", 0.0)  # a checkpoint after every model run
    embedder = load_embedder()
    texts = [note(i) for i in range(17)]  # windows of 3, 7, 7
    seen: list[tuple[int, int]] = []
    saved: list[tuple[list[int], Any]] = []
    out = embed_pending(embedder, texts, progress=lambda d, t: seen.append((d, t)),
                        checkpoint=lambda made, rows: saved.append((made, rows[made].copy())))
    assert out.shape == (17, embedder.dim) and out.dtype == np.dtype("<f4")
    assert seen[0] == (0, 17) and seen[-1] == (17, 17)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and {t for _, t in seen} == {17}
    # After each run but the last (the caller saves it all), each time with every row made so far.
    assert [len(made) for made, _ in saved] == [d for d, _ in seen[1:-1]]
    for made, rows in saved:
        assert made == sorted(made) and np.array_equal(rows, out[made])
    assert embed_pending(embedder, []).shape == (0, embedder.dim)


def test_an_index_holds_its_texts_a_few_windows_at_a_time_and_its_vectors_once(
        repo: Any, cli: Any, monkeypatch: pytest.MonkeyPatch, small_windows: None) -> None:
    # What a first index holds grows with the windows, not the vault: the keyword index is built before the
    # model starts; when the model embeds a window, the texts of that window and all before it are let go, each
    # token id takes 4 bytes; and once every vector is in, no packet or text is held while the graph is built,
    # on the very rows the model wrote (no second copy).
    import numpy as np

    write_notes(repo, [f"n-{i}" for i in range(40)])
    seen: dict[str, Any] = {"calls": 0, "cleared": [], "compact": [], "order": []}
    real_run, real_embed, real_finish = index._IndexBuilder.run, index.embed_pending, index._GraphUpdate.finish
    real_lexical = index._IndexBuilder._lexical

    def lexical(self: Any, *args: Any) -> Any:
        built = real_lexical(self, *args)
        seen["order"].append("keyword index")
        return built

    def run(self: Any, rendered: Any, digests: Any) -> Any:
        seen["packets"] = rendered
        return real_run(self, rendered, digests)

    def embed(embedder: Any, texts: list[str], **kwargs: Any) -> Any:
        seen["texts"], seen["out"] = texts, kwargs.get("out")
        windows = index.index_windows(len(texts))

        class Watching:
            dim, model_id = embedder.dim, embedder.model_id

            def tokenize(self, batch: list[str]) -> Any:
                return embedder.tokenize(batch)

            def embed_tokens(self, tokens: Any, **more: Any) -> Any:
                end = windows[seen["calls"]][1]
                seen["calls"] += 1
                seen["order"].append("model")
                seen["cleared"].append(all(t == "" for t in texts[:end]))
                seen["compact"].append(all(getattr(row, "itemsize", 0) == 4 for row in tokens))
                return embedder.embed_tokens(tokens, **more)

        return real_embed(Watching(), texts, **kwargs)

    def finish(self: Any, vectors: Any) -> Any:
        seen["held"] = seen["packets"].rendered, sum(1 for t in seen["texts"] if t)
        seen["in place"] = seen["out"] is not None and np.shares_memory(vectors, seen["out"])
        return real_finish(self, vectors)

    monkeypatch.setattr(index._IndexBuilder, "run", run)
    monkeypatch.setattr(index._IndexBuilder, "_lexical", lexical)
    monkeypatch.setattr(index, "embed_pending", embed)
    monkeypatch.setattr(index._GraphUpdate, "finish", finish)
    r = cli("index", "--yes", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert seen["calls"] == len(index.index_windows(40)) == 7
    assert all(seen["cleared"]) and all(seen["compact"])
    assert seen["held"] == (0, 0) and seen["in place"]
    # More notes than a window: the keyword index's term counts come and go before the model starts.
    assert seen["order"][0] == "keyword index" and seen["order"].count("model") == 7
    monkeypatch.undo()
    # The rows written in place are the vectors of each text embedded alone, bit for bit.
    embedder = load_embedder()
    got = vectors_by_text(repo.path)
    assert len(got) == 40
    for text, vector in got.items():
        assert np.array_equal(vector, roundtrip(embedder.embed([text]))[0])


def test_a_handful_of_edits_is_embedded_one_text_a_run() -> None:
    # The post-commit case: each edited note is its own model run, so the lanes share them evenly (runs of 4
    # left one lane 6 of 10 notes) and no note is padded; the vectors are the same bits as in any runs.
    import numpy as np

    real = load_embedder(lanes=2)
    texts = [note(i) for i in range(10)]

    class Counting:
        dim = real.dim
        model_id = real.model_id

        def __init__(self) -> None:
            self.runs: list[int] = []

        def tokenize(self, texts: list[str]) -> list[list[int]]:
            return real.tokenize(texts)

        def embed_tokens(self, tokens: Any, **kwargs: Any) -> Any:
            counted = kwargs.pop("on_run")
            return real.embed_tokens(tokens, **kwargs,
                                     on_run=lambda run, rows: (self.runs.append(len(run)), counted(run, rows)))

    counting = Counting()
    out = embed_pending(counting, texts)  # type: ignore[arg-type]
    assert counting.runs == [1] * 10
    assert np.array_equal(out, roundtrip(real.embed(texts, batch_size=4)))


def test_a_tokeniser_failure_stops_the_index_and_its_thread(small_windows: None) -> None:
    real = load_embedder()

    class Failing:
        dim = real.dim
        model_id = real.model_id
        calls = 0

        def tokenize(self, texts: list[str]) -> list[list[int]]:
            self.calls += 1
            if self.calls == 2:
                raise EmbedderError("tokeniser broke on the second window")
            return real.tokenize(texts)

        def embed_tokens(self, tokens: Any, **kwargs: Any) -> Any:
            return real.embed_tokens(tokens, **kwargs)

    with pytest.raises(EmbedderError, match="second window"):
        embed_pending(Failing(), [note(i) for i in range(12)])  # type: ignore[arg-type]
    assert not [t for t in threading.enumerate() if t.name == "vivary-tokenise"]


# --- what the user sees --------------------------------------------------------------------------------------

SUMMARY = re.compile(r"vivary: embedded (\d+) note\(s\) in \d+\.\ds \(\d+\.\d notes/s\)")


def test_index_prints_one_summary_line_off_a_terminal(repo: Any, cli: Any) -> None:
    write_notes(repo, [f"n-{i}" for i in range(6)])
    r = cli("index", "--yes", cwd=repo.path)
    assert r.code == 0, r.err
    lines = r.err.splitlines()
    assert len(lines) == 1 and SUMMARY.fullmatch(lines[0]), r.err
    assert SUMMARY.fullmatch(lines[0]).group(1) == "6"  # type: ignore[union-attr]
    assert "\r" not in r.err and "\033" not in r.err  # no bar drawing in a log

    repo.write({"notes/n-1.md": "# Note 1\n\nRewritten.\n"})
    r = cli("index", "--yes", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["embedded"] == 1  # stdout stays JSON: the line goes to stderr
    assert SUMMARY.fullmatch(r.err.strip()).group(1) == "1"  # type: ignore[union-attr]

    r = cli("index", "--yes", cwd=repo.path)  # nothing to embed: nothing about embedding
    assert r.code == 0 and r.err == "" and "up to date" in r.out


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_terminal_progress_bar_shows_rate_and_eta() -> None:
    now = [100.0]
    screen = Terminal()
    progress = EmbedProgress(screen, clock=lambda: now[0])
    progress(0, 1000)
    now[0] += 10.0
    progress(200, 1000)
    now[0] += 0.05
    progress(210, 1000)  # within a tenth of a second of the last draw: not redrawn
    now[0] += 10.0
    progress(400, 1000)
    now[0] += 29.95
    progress(1000, 1000)
    frames = screen.getvalue().split("\r")[1:]
    assert frames[1] == "vivary: embedding [####--------------------] 200/1,000 notes  20.0 notes/s  ETA 40s\033[K"
    assert frames[2] == "vivary: embedding [#########---------------] 400/1,000 notes  20.0 notes/s  ETA 30s\033[K"
    assert frames[-1] == "vivary: embedded 1,000 note(s) in 50.0s (20.0 notes/s)\033[K\n"
    assert len(frames) == 4  # start, 200, 400, done

    log = io.StringIO()  # not a terminal: the summary alone
    progress = EmbedProgress(log, clock=lambda: now[0])
    progress(0, 3)
    progress(2, 3)
    now[0] += 2.0
    progress(3, 3)
    assert log.getvalue() == "vivary: embedded 3 note(s) in 2.0s (1.5 notes/s)\n"


def test_off_a_terminal_a_progress_line_comes_every_interval(repo: Any, cli: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # A CI log is not a terminal: without a line now and then it shows nothing for the minutes a big index takes.
    now = [100.0]
    log = io.StringIO()
    progress = EmbedProgress(log, clock=lambda: now[0])
    assert progress.every == 10.0  # the default, as pip's and git's progress in logs
    progress(0, 1000)
    for done in range(20, 1000, 20):  # a model run every 2 s
        now[0] += 2.0
        progress(done, 1000)
    now[0] += 2.0
    progress(1000, 1000)
    lines = log.getvalue().splitlines()
    assert lines[0] == "vivary: embedding 100/1,000 notes  10.0 notes/s  ETA 1m30s"  # 10 s in
    assert lines[1] == "vivary: embedding 200/1,000 notes  10.0 notes/s  ETA 1m20s"
    assert len(lines) == 10 and lines[-1] == "vivary: embedded 1,000 note(s) in 100.0s (10.0 notes/s)"
    assert "\r" not in log.getvalue() and "\033" not in log.getvalue()

    # The real command, with the interval set by the environment (as GIT_PROGRESS_DELAY sets Git's).
    # With the interval 0, a line after every model run but the last (which the summary reports): 100 notes
    # are several runs of up to 32.
    monkeypatch.setenv("VIVARY_PROGRESS_SECONDS", "0")
    write_notes(repo, [f"n-{i}" for i in range(100)])
    r = cli("index", "--yes", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["embedded"] == 100
    lines = r.err.splitlines()
    assert SUMMARY.fullmatch(lines[-1]) and len(lines) >= 4, r.err
    counts = []
    for line in lines[:-1]:
        found = re.fullmatch(r"vivary: embedding (\d+)/100 notes  \d+\.\d notes/s  ETA \w+", line)
        assert found, line
        counts.append(int(found.group(1)))
    assert counts == sorted(counts) and counts[0] > 0 and counts[-1] < 100


@pytest.mark.parametrize("command", [["git", "vivary"], ["git-vivary"]])
def test_ctrl_c_ends_an_index_run_at_once_and_keeps_every_vector_made(repo: Any, cli: Any,
                                                                      command: list[str]) -> None:
    # A real `git vivary index --yes`, interrupted as a terminal's Ctrl-C reaches it: SIGINT to the whole process
    # group. Through Git's own command dispatch both `git` and `git-vivary` get it, and `git` passes it on once
    # more to the command it waits for. Sent once embedding has begun (its first progress line), it must stop
    # the model inside the runs under way rather than finish them, save what it made, say so and exit 130.
    import os
    import signal
    import subprocess
    import sys

    total = 300
    write_notes(repo, [f"n-{i}" for i in range(total)])
    env = dict(os.environ, VIVARY_PROGRESS_SECONDS="0")  # a progress line after every model run
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    # As a terminal's foreground job has it: SIGINT's default action, whatever this process inherited (a test
    # run started as a background job by a shell without job control has SIGINT ignored, and so would its
    # children, which then rightly ignore Ctrl-C as every background job does).
    proc = subprocess.Popen([*command, "index", "--yes"], cwd=repo.path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stderr is not None
    made, lines = 0, []
    while not made:
        line = proc.stderr.readline()
        lines.append(line)
        found = re.match(r"vivary: embedding (\d+)/(\d+) notes", line)
        if found:
            made = int(found.group(1))
            assert int(found.group(2)) == total
        elif not line:
            raise AssertionError(f"exited {proc.wait()} before embedding: {''.join(lines)}")
    os.killpg(proc.pid, signal.SIGINT)
    rest = proc.communicate(timeout=300)[1]  # only so a run that ignores the signal fails rather than hangs
    # `git` waits for its command, then dies of the same signal, which a shell reports as 128 + 2 = 130 too.
    assert proc.returncode == (-signal.SIGINT if command[0] == "git" else 130), rest
    kept = re.search(r"vivary: kept the ([\d,]+) of ([\d,]+) new vector\(s\) made; `git vivary index --yes` "
                     r"embeds only the rest\n", rest)
    assert kept and int(kept.group(2).replace(",", "")) == total, rest
    assert rest.endswith("git vivary: interrupted\n") and "Traceback" not in rest, rest
    saved = int(kept.group(1).replace(",", ""))
    # It stopped before the end, and kept at least every vector it had reported before the signal...
    assert made <= saved < total, rest
    # ...which the next run reuses: it embeds only the rest.
    r = cli("index", "--yes", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["embedded"] == total - saved and r.json()["reused"] == saved
