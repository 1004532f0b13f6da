"""The init wizard through a real terminal: `git vivary init` runs on a pty and we answer its prompts.

It must ask only the two plain-English questions of the contract (capabilities; extra recall), the
second only after a semantic choice, and whatever is chosen the memory policy is written disabled.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from vivary_git.memory.config import parse_memory_config
from vivary_git.scaffold.wizard import CAPABILITIES_QUESTION, RECALL_QUESTION

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="needs a POSIX pty")


def run_on_pty(args: list[str], cwd: Path, answers: list[str], timeout: float = 30.0,
               prompt: bytes = b"Your choice [") -> tuple[int, str]:
    """Run `git vivary ARGS` with a pty as stdin/stdout/stderr; send each answer after each prompt."""
    master, slave = pty.openpty()
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"], TERM="dumb")
    proc = subprocess.Popen(["git", "vivary", *args], cwd=cwd, stdin=slave, stdout=slave, stderr=slave, env=env,
                            close_fds=True)
    os.close(slave)
    output = b""
    pending = list(answers)
    prompts_seen = 0
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not chunk:
                    break
                output += chunk
                prompts = output.count(prompt)
                while prompts > prompts_seen and pending:
                    os.write(master, pending.pop(0).encode() + b"\n")
                    prompts_seen += 1
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return code, output.decode("utf-8", "replace").replace("\r\n", "\n")


def _questions(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip().endswith("?")]


def test_wizard_cognee_asks_exactly_two_questions(tmp_path: Path) -> None:
    code, out = run_on_pty(["init", "ws", "--preset", "writing"], tmp_path, ["4", ""])
    assert code == 0, out
    assert _questions(out) == [CAPABILITIES_QUESTION, RECALL_QUESTION]
    cfg = parse_memory_config((tmp_path / "ws/.vivary/memory.toml").read_bytes())
    assert cfg.memory.provider == "cognee" and cfg.memory.enabled is False
    assert cfg.memory.cognee.allow_network is False and cfg.memory.cognee.require_explicit_index is True


def test_wizard_typed_graph_only_asks_one_question(tmp_path: Path) -> None:
    code, out = run_on_pty(["init", "ws"], tmp_path, ["1"])
    assert code == 0, out
    assert _questions(out) == [CAPABILITIES_QUESTION]
    assert not (tmp_path / "ws/.vivary").exists()
    assert (tmp_path / "ws/modules/knowledge-base/index.md").is_file()


def test_wizard_second_answer_wins_and_bad_answers_are_asked_again(tmp_path: Path) -> None:
    # `²` is a digit to str.isdigit() and not to int(): it ended the wizard in a ValueError traceback.
    code, out = run_on_pty(["init", "ws", "--preset", "knowledge-work"], tmp_path, ["3", "9", "²", "2"])
    assert code == 0, out
    assert "Please answer with a number from 1 to 4." in out and "Traceback" not in out
    assert _questions(out) == [CAPABILITIES_QUESTION, RECALL_QUESTION]
    assert not (tmp_path / "ws/.vivary/memory.toml").exists()  # "Local Vivary search only": no memory policy


def test_wizard_local_memory_and_flags_skip_it(tmp_path: Path) -> None:
    code, out = run_on_pty(["init", "a"], tmp_path, ["3", ""])
    assert code == 0, out
    assert parse_memory_config((tmp_path / "a/.vivary/memory.toml").read_bytes()).memory.provider == "vivary-local"
    # A flag decides: no question at all, even on a terminal.
    code, out = run_on_pty(["init", "b", "--memory", "none"], tmp_path, [])
    assert code == 0 and _questions(out) == [], out
    code, out = run_on_pty(["init", "c", "--no-wizard"], tmp_path, [])
    assert code == 0 and _questions(out) == [], out


@pytest.mark.parametrize("answer,code", [("n", 3), ("", 3), ("y", 0)])
def test_init_in_a_folder_with_files_asks_first(answer: str, code: int, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "idea.md").write_text("# Idea\n")
    got, out = run_on_pty(["init", ".", "--memory", "none"], ws, [answer], prompt=b"[y/N]: ")
    assert got == code, out
    assert "already holds files; init would change:" in out and "create     tropo.toml" in out
    assert "1 note(s) already here stay visible" in out and "Write these " in out
    assert (ws / "tropo.toml").exists() is (code == 0)
    if code:
        assert "nothing was written (not confirmed)" in out
