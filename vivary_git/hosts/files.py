"""Reading and writing the files bootstrap-host and onboard touch: bounded, UTF-8, atomic, no surprises.

Project files live in a workspace someone else may have written: a symlink there could point anywhere
(`AGENTS.md -> ~/.ssh/authorized_keys`), so a project path with a symlink in it is refused. User-level
files (the desktop app's config, `~/.codex/config.toml`) are the user's own and are often symlinks into
a dotfiles repository: those are followed, and the target is edited in place. Every rewrite is atomic and
keeps the bytes it replaces (`backups`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from vivary_git.errors import ConfigError, RefusedError
from vivary_git.hosts import backups

MAX_BYTES = 4 * 1024 * 1024  # a host config or guidance file is a few KiB; a bigger one is not one we edit


HOST_FIX = "replace the link with the file, or configure this host by hand"


def project_path(root: Path, rel: str, *, by: str = "bootstrap-host", fix: str = HOST_FIX) -> Path:
    """`root/rel`, refused when any part of it below the root is a symlink: `by` names the command that
    refuses (it writes these files) and `fix` what to do about the link, in that command's terms."""
    path = root
    for part in Path(rel).parts:
        path = path / part
        if path.is_symlink():
            raise RefusedError(f"{path} is a symlink; {by} edits only real files inside the workspace (a link "
                               f"could point anywhere); {fix}")
    return path


def home_relative(path: Path) -> str:
    """A user-level file's path as the user reads it: `~/...` under the home folder, else whole."""
    with contextlib.suppress(ValueError):
        return "~/" + path.relative_to(Path.home()).as_posix()
    return str(path)


def user_path(path: Path) -> Path:
    """The file a user-level path names: its symlink's target when it is one. A link to nothing is refused:
    writing through it would create its target, and the folders to it, wherever the link points."""
    if not path.is_symlink():
        return path
    target = Path(os.path.realpath(path))
    if not target.exists():
        raise RefusedError(f"{path} is a symlink to {os.readlink(path)}, which does not exist; bootstrap-host edits "
                           "the file a link points to but does not create it: create that file (or remove the "
                           "link) and run again; nothing was written")
    return target


def read(path: Path, shown: str, *, limit: int = MAX_BYTES) -> str | None:
    """The file's text, or None when there is no file. Refuses what is not a small (`limit` bytes at most) regular
    UTF-8 file."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ConfigError(f"{shown}: cannot read it ({err.strerror}); fix its permissions") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"{shown} is not a regular file; move it aside and run again")
    if st.st_size > limit:
        raise ConfigError(f"{shown} is {st.st_size} bytes, more than {limit}: not a file vivary edits (a host "
                          "config, a guidance file, USER.md or MEMORY.md is a few KiB); check it is the right file")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ConfigError(f"{shown}: cannot read it ({err.strerror}); fix its permissions") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise ConfigError(f"{shown}: line {line}: not UTF-8 text (byte {err.start}); save it as UTF-8 and run "
                          "again; nothing was written") from None


def write(path: Path, shown: str, text: str | None, *, before: str | None, private: bool = False) -> None:
    """Replace the file with `text` (None: delete it), atomically, if it still holds `before`.

    The bytes it held are kept first (`backups`: under `.git/vivary/backups/`, the last five, when a Git work
    tree holds the file). The new text goes to a temporary file in the same folder, is synced to disk and
    renamed over the old one, with the old one's mode (a new file: 0644, or 0600 when `private`); a reader
    sees the old file or the new one, never half of one. A symlink found where the file was read is refused,
    never replaced by a regular file: callers pass a user-level file's target (`user_path`), so a link here
    was put there since."""
    if path.is_symlink():
        raise RefusedError(f"{shown} became a symlink while this command ran; nothing was written to it; replace "
                           "the link with the file and run again")
    if read(path, shown) != before:
        raise RefusedError(f"{shown} changed while this command ran; nothing was written to it; run again")
    check_writable(path, shown)
    if before is not None:
        backups.keep(path, shown, before.encode("utf-8"))  # `read` decoded these very bytes as UTF-8
    if text is None:
        path.unlink()
        _sync_folder(path.parent)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = 0o600 if private else 0o644
    with contextlib.suppress(FileNotFoundError):
        mode = stat.S_IMODE(path.stat().st_mode)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(text.encode("utf-8"))
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _sync_folder(path.parent)


def check_writable(path: Path, shown: str) -> None:
    """Refuse a file its owner made read-only: the atomic rename would replace it all the same (it asks
    only the folder), silently undoing a `chmod a-w` meant to keep the file as it is."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return
    if not st.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise RefusedError(f"{shown} is read-only (mode {stat.S_IMODE(st.st_mode):04o}); nothing was written to it; "
                           f"make it writable (chmod u+w {path}) and run again, or make the change by hand "
                           "(--dry-run prints it)")


def _sync_folder(folder: Path) -> None:
    """Make a rename or removal in `folder` durable; some systems cannot sync a folder, and lose nothing else."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
