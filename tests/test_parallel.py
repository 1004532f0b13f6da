"""`parallel.Forked`: one job on the second core, handed back in one or more frames."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from vivary_git import parallel


@pytest.fixture(autouse=True)
def two_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIVARY_JOBS", "2")


def no_child_left() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def test_frames_arrive_in_order_and_the_child_is_reaped() -> None:
    def job() -> Iterator[bytes]:
        yield b"parts"
        yield b""  # an empty frame is a frame
        yield b"x" * 300_000

    job_ = parallel.Forked(job, frames=3)
    assert job_.forked
    assert [job_.result(), job_.result(), job_.result()] == [b"parts", b"", b"x" * 300_000]
    assert not job_.forked and no_child_left()
    assert job_.result() is None  # nothing more


def test_one_frame_as_before() -> None:
    job = parallel.Forked(lambda: b"all of it")
    assert job.result() == b"all of it" and no_child_left()


def test_a_child_that_fails_after_a_frame_still_delivers_that_frame() -> None:
    def job() -> Iterator[bytes]:
        yield b"first"
        raise MemoryError("the second cannot be made")

    job_ = parallel.Forked(job, frames=2)
    assert job_.result() == b"first"
    assert job_.result() is None and no_child_left()


def test_a_child_that_fails_at_once_delivers_nothing() -> None:
    def job() -> Iterator[bytes]:
        raise MemoryError("nothing")
        yield b""  # pragma: no cover - makes this a generator

    job_ = parallel.Forked(job, frames=2)
    assert job_.result() is None and job_.result() is None and no_child_left()


def test_the_last_frame_counts_only_when_nothing_follows_it() -> None:
    def job() -> Iterator[bytes]:
        yield b"one"
        yield b"two"
        yield b"three: one more than asked for"

    job_ = parallel.Forked(job, frames=2)
    assert job_.result() == b"one" and job_.result() is None and no_child_left()


def test_the_next_frame_is_made_while_the_last_waits_to_be_read(tmp_path: Path) -> None:
    """Frames are written behind, by a thread of the child: a first frame bigger than the pipe holds does
    not keep the child from making the second before this process reads anything."""
    made = tmp_path / "second-made"

    def job() -> Iterator[bytes]:
        yield b"p" * (4 << 20)
        made.write_text("yes")
        yield b"second"

    job_ = parallel.Forked(job, frames=2)
    deadline = time.monotonic() + 120  # a liveness bound, not a speed check: it fails only by hanging
    while not made.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert made.exists(), "the child waited for its first frame to be read before making the second"
    assert job_.result() == b"p" * (4 << 20) and job_.result() == b"second" and no_child_left()


def test_cancel_after_a_frame_stops_the_child() -> None:
    def job() -> Iterator[bytes]:
        yield b"first"
        yield b"q" * (16 << 20)  # more than the pipe holds: the child waits for a reader that never comes

    job_ = parallel.Forked(job, frames=2)
    assert job_.result() == b"first"
    job_.cancel()
    assert not job_.forked and no_child_left() and job_.result() is None


def test_no_child_with_one_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VIVARY_JOBS", "1")
    job = parallel.Forked(lambda: b"x", frames=1)
    assert not job.forked and job.result() is None  # the caller does the work itself
