"""Onboarding: the first-start questions, kept as a pinned profile in USER.md.

USER.md is on the privacy floor: never indexed, never in a cache ref, never in a recall result. The
answers are written there and nowhere else; the reports of this module name which questions are
answered, never the answers. A USER.md that Git tracks is refused (the answers would reach the next
commit); one Git would not ignore is added to `.git/info/exclude`, which is never committed.
"""

from __future__ import annotations

import importlib.resources
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from vivary_git import git
from vivary_git.errors import RefusedError, UsageError
from vivary_git.hosts import blocks, files

USER_FILE = "USER.md"
QUESTIONS: dict[str, str] = {
    "name": "What should I call you?",
    "role": "What is your role (what do you do)?",
    "language": "Which language should I answer in?",
    "style": "How should I answer (for example: brief, detailed, with sources, step by step)?",
    "goal": "What is your goal for this workspace?",
}
MARKERS = blocks.Markers(
    "<!-- >>> vivary profile (pinned): written by `git vivary onboard`; private to this machine >>> -->",
    "<!-- <<< vivary profile <<< -->",
)
MAX_ANSWER = 500
_LINE = re.compile(r"^- ([a-z]+): (.*)$")
_HEAD = "### Profile (pinned)\n\n"


@dataclass
class Onboarding:
    file: str
    written: list[str] = field(default_factory=list)  # answers set or changed by this call
    removed: list[str] = field(default_factory=list)  # answers taken back by this call (they were there)
    answered: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    excluded: bool = False  # USER.md was added to .git/info/exclude

    @property
    def done(self) -> bool:
        return not self.missing


def _one_line(value: str) -> str:
    value = "".join(" " if (ord(c) < 32 or ord(c) == 127) else c for c in value)
    return " ".join(value.split())


def clean(value: str) -> str:
    """One line, no control characters, bounded; `<` and `>` escaped so no answer can forge a marker."""
    value = _one_line(value)[:MAX_ANSWER]
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _refuse_unfit(answers: Mapping[str, str]) -> None:
    """Every answer fits before any is written: at most `MAX_ANSWER` characters on one line, and nothing that
    looks like a credential (the profile is shown to agents at every start). A refusal names the question,
    never the value."""
    from vivary_git.memory.writes import secrets

    for key, value in answers.items():
        n = len(_one_line(value))
        if n > MAX_ANSWER:
            raise UsageError(f"answer to {key!r} is {n:,} characters; keep it under {MAX_ANSWER} (one line: "
                             "what an agent should know at every start); nothing was written")
    hit = secrets.find_secret(answers.items())
    if hit is not None:
        key, _, name = hit
        raise RefusedError(f"answer to {key!r} looks like a credential ({name}, found by "
                           f"{secrets.scanner_name()}); the profile is shown to agents, so it must never hold "
                           "a secret: say where it lives instead; nothing was written")


def _unescape(value: str) -> str:
    return value.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _key(key: str) -> str:
    key = key.strip().lower().replace("-", "_")
    return {"response_style": "style"}.get(key, key)


def parse_answers(pairs: list[str]) -> dict[str, str]:
    """`KEY=VALUE` answers (the command line's `--answer`)."""
    answers: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or _key(key) not in QUESTIONS:
            raise UsageError(f"--answer {pair.split('=', 1)[0]!r}: use KEY=VALUE with KEY one of "
                             + ", ".join(QUESTIONS))
        answers[_key(key)] = value
    return answers


def check_answers(given: Mapping[str, str], *, what: str = "answer") -> dict[str, str]:
    """Answers given as a mapping (the MCP `onboard` tool), keys read as `--answer` reads them; an unknown
    key is a usage error naming it and the keys there are, and nothing is written."""
    answers: dict[str, str] = {}
    for key, value in given.items():
        if not isinstance(key, str) or not isinstance(value, str) or _key(key) not in QUESTIONS:
            raise UsageError(f"{what} {str(key)[:80]!r}: give KEY: VALUE (text) with KEY one of "
                             + ", ".join(QUESTIONS))
        answers[_key(key)] = value
    return answers


def _user_path(root: Path) -> Path:
    return files.project_path(root, USER_FILE, by="onboard", fix=f"remove the link (its target is kept) and run "
                              f"onboard again: it writes a new {USER_FILE}")


def read_profile(root: Path) -> dict[str, str]:
    text = files.read(_user_path(root), USER_FILE)
    inner = None if text is None else MARKERS.inner(text, USER_FILE)
    profile: dict[str, str] = {}
    for line in (inner or "").splitlines():
        m = _LINE.match(line)
        if m and m.group(1) in QUESTIONS and m.group(2).strip():
            profile[m.group(1)] = _unescape(m.group(2))
    return profile


def status(root: Path) -> Onboarding:
    profile = read_profile(root)
    return Onboarding(USER_FILE, answered=[k for k in QUESTIONS if k in profile],
                      missing=[k for k in QUESTIONS if k not in profile])


def record(root: Path, answers: dict[str, str]) -> Onboarding:
    """Merge `answers` into the profile (an empty answer removes one) and write USER.md. Only what changes is
    reported (`written`, `removed`); when nothing does, the file is not touched. The last answer taken back
    takes the block with it, and a USER.md holding nothing but what onboard wrote goes too."""
    _refuse_unfit(answers)
    path = _user_path(root)
    _refuse_tracked(root, path)
    before = files.read(path, USER_FILE)
    old = read_profile(root)
    profile = dict(old)
    for key, value in answers.items():
        v = clean(value)
        if v:
            profile[key] = _unescape(v)
        else:
            profile.pop(key, None)
    written = [k for k in QUESTIONS if k in profile and old.get(k) != profile[k]]
    removed = [k for k in QUESTIONS if k in old and k not in profile]
    after = _with_profile(before, profile) if written or removed else before
    excluded = _keep_out_of_git(root, path) if after is not None else False
    if after != before:
        files.write(path, USER_FILE, after, before=before, private=True)
    report = status(root)
    report.written, report.removed = written, removed
    report.excluded = excluded
    return report


def _intro() -> str:
    return importlib.resources.files("vivary_git.scaffold").joinpath("templates/USER.md").read_text("utf-8")


def _with_profile(before: str | None, profile: dict[str, str]) -> str | None:
    """USER.md with the profile block set to `profile` (None: no file). An empty profile is no block: removing it
    is the exact inverse of adding it, so a file that then holds only the intro onboard wrote is removed."""
    if not profile:
        if before is None:
            return None
        rest = blocks.remove(before, MARKERS, USER_FILE)
        return None if rest is None or rest == _intro() else rest
    body = _HEAD + "".join(f"- {k}: {clean(profile[k])}\n" for k in QUESTIONS if k in profile)
    if before is None:
        return _intro() + "\n" + blocks.render(MARKERS, body, "\n")
    return blocks.put(before, MARKERS, body, USER_FILE)


def _repo_top(root: Path) -> Path | None:
    """The top of the work tree holding `root`, as `git.Repo` finds it: a folder a commit laid out as a Git
    directory (`root/HEAD`, `root/config`, `root/info/exclude`) is a folder of the repository around it, never
    one whose exclude rules and index decide whether USER.md is tracked or ignored. None outside a work tree."""
    repo = git.try_open(root)
    if repo is None or repo.workdir is None:
        return None
    try:
        root.resolve().relative_to(repo.workdir)
    except ValueError:
        return None  # a work tree set elsewhere than the folder (core.worktree): not the one holding it
    return repo.workdir


def _refuse_tracked(root: Path, path: Path) -> None:
    top = _repo_top(root)
    if top is None:
        return
    rel = path.relative_to(top).as_posix()
    tracked = git.run(["ls-files", "--error-unmatch", "--", rel], cwd=top, check=False)
    if tracked.returncode == 0:
        raise RefusedError(f"{rel} is tracked by Git, so your answers would reach the next commit; untrack it "
                           f"(`git rm --cached -- {rel}`, and keep it ignored) and run again; nothing was written")


def _keep_out_of_git(root: Path, path: Path) -> bool:
    """Make sure Git ignores USER.md; when no rule does, add one to .git/info/exclude (never committed)."""
    top = _repo_top(root)
    if top is None:
        return False
    rel = path.relative_to(top).as_posix()
    proc = git.run(["check-ignore", "-q", "--no-index", "--", rel], cwd=top, check=False)
    if proc.returncode == 0:
        return False
    exclude = Path(git.out(["rev-parse", "--git-path", "info/exclude"], cwd=top))
    if not exclude.is_absolute():
        exclude = top / exclude
    exclude.parent.mkdir(parents=True, exist_ok=True)
    old = exclude.read_text("utf-8") if exclude.is_file() else ""
    line = "/" + re.sub(r"([*?\[\\!#])", r"\\\1", rel)
    sep = "" if old == "" or old.endswith("\n") else "\n"
    with exclude.open("a", encoding="utf-8") as f:
        f.write(f"{sep}# private profile written by git vivary onboard\n{line}\n")
    check = git.run(["check-ignore", "-q", "--no-index", "--", rel], cwd=top, check=False)
    if check.returncode != 0:
        raise RefusedError(f"could not make Git ignore {rel} (see {exclude}); add it to .gitignore and run again")
    return True


def ask(stdin: TextIO, stderr: TextIO, keys: list[str]) -> dict[str, str]:
    """The questions for `keys`, asked on a terminal; an empty line skips one."""
    answers: dict[str, str] = {}
    for key in keys:
        stderr.write(f"{QUESTIONS[key]} ")
        stderr.flush()
        line = stdin.readline()
        if not line:
            break
        if line.strip():
            answers[key] = line.strip()
    return answers
