"""`git vivary …`: argument parsing and dispatch only. Each command lives in `commands/NAME.py`."""

from __future__ import annotations

import argparse
import errno
import gc
import importlib
import importlib.util
import os
import signal
import sys
from collections.abc import Sequence
from typing import TextIO

from vivary_git.errors import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, EXIT_USAGE, VivaryError
from vivary_git.escape import text
from vivary_git.version import __version__

# Order is the order of `git vivary -h`. A command whose module is not there (yet) is left out.
COMMANDS = (
    "check", "graph", "blast", "query", "find", "recall", "index", "forget", "privacy", "doctor", "init",
    "capabilities", "hooks", "ci", "sync", "cache", "mcp", "remember", "log", "bootstrap-host", "host-status",
    "onboard", "dream", "digest", "refresh", "edit", "retire", "move", "recent", "context",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {text(message)}", file=sys.stderr)
        sys.exit(EXIT_USAGE)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or, with `only`, just that command's part: a hook or an agent turn
    then imports one command module instead of all of them."""
    parser = _Parser(
        prog="git vivary",
        description="A typed knowledge graph (and optional private semantic memory) derived from the Markdown "
        "in a Git tree. Every command reads one tree: --rev REV, --staged, or the working tree (default).",
        epilog="Exit codes: 0 clean, 1 findings, 2 usage or config error, 3 refused. "
        "Run `git vivary COMMAND -h` for a command's options and the page of docs/ that documents it.",
    )
    parser.add_argument("--version", action="version", version=f"vivary-git {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in (only,) if only is not None else COMMANDS:
        module_name = f"vivary_git.commands.{name.replace('-', '_')}"  # bootstrap-host → bootstrap_host
        if importlib.util.find_spec(module_name) is None:
            continue
        module = importlib.import_module(module_name)
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from vivary_git.escape import spell_everything

    spell_everything(sys.stdout, sys.stderr)  # before anything is said: a usage error may quote a name in any script
    if argv is None and hasattr(signal, "SIGCHLD"):
        # A parent that ignores SIGCHLD passes that on through exec, and then the system reaps our
        # git subprocesses and forked children itself: their exit codes would all read 0.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = args_list[0] if args_list else None
    try:
        parser = build_parser(first if first in COMMANDS else None)
    except Exception as err:  # only running out of memory, importing the command's modules, is said here
        if not _short_of_memory(err):
            raise
        _say_out_of_memory(first if first in COMMANDS else None, err)
        return EXIT_USAGE
    try:
        args, extra = parser.parse_known_args(args_list)
        if extra:  # said by the (sub)command they were given to, with its usage: not the top-level one
            _chosen(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
        cwd = getattr(args, "cwd", None)
        if cwd and not os.path.isdir(cwd):  # (`-C ""` is where it started, as in Git)
            # `-C a.md` (or a folder that is not there) inside a repository ran on the repository Git found from
            # where the command started, silently: Git itself says "Not a directory" / "No such file or directory".
            said = "not a directory" if os.path.exists(cwd) else "no such directory"
            _chosen(parser, args).error(f"-C {cwd}: {said}; -C names the folder to run in")
    except SystemExit as exit_:  # argparse's own exits: -h/--version (0) and usage errors (2)
        return int(exit_.code or 0)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    if not (cwd and os.path.isabs(cwd)):
        try:
            os.getcwd()
        except OSError as err:  # a shell still in a folder since removed: every command ended in a traceback
            why = text(err.strerror or str(err))
            _say(f"git vivary {args.command}: cannot read the current folder ({why}): it was removed, or a folder "
                 "above it may not be looked into; cd to a folder that exists, or name one with -C PATH")
            return EXIT_USAGE
    # A command allocates millions of short-lived, acyclic objects (parsed notes, facts, findings): the
    # cyclic collector's passes over them cost ~10% of a cold run and free nothing. It is back on
    # afterwards for callers that run commands in-process.
    collecting = gc.isenabled()
    gc.disable()
    try:
        code: int = args.run(args)
    except VivaryError as err:
        code = err.exit_code
        _say(f"git vivary {args.command}: {text(str(err))}", *(f"  {text(line)}" for line in err.detail))
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
        _say("git vivary: interrupted")
    except BrokenPipeError:
        # `git vivary check | head -1`: the reader left before the command finished, so its verdict was
        # never printed whole. Not 0: under `set -o pipefail` that would pass a failing check.
        _reader_left()
        return EXIT_BROKEN_PIPE
    except Exception as err:  # after BrokenPipeError: output that cannot be written, or running out of memory
        if isinstance(err, OSError) and _output_lost(args.command, err):
            return EXIT_USAGE
        if not _short_of_memory(err):
            raise
        # A limit on this process's memory (`ulimit -d`/`-v`, a server's on its hooks, a container's): what it held
        # is let go by now, so this can be said. A gate that could not finish refuses, as on any error.
        code = EXIT_USAGE
        _say_out_of_memory(args.command, err)
    finally:
        from vivary_git import lifetime

        # The console script frees nothing before it exits (lifetime.py): a first pass of the collector over
        # everything the command allocated would be spent for nothing then.
        if collecting and not lifetime.leaving():
            gc.enable()
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        # The whole output was handed over and the verdict is known: the reader left before reading it all.
        _reader_left()
    except OSError as err:
        if not _output_lost(args.command, err):
            raise
        return EXIT_USAGE
    writes = sys.modules.get("vivary_git.memory.writes.commits")
    if writes is not None:  # a memory write committed, and another program kept it out of the user's index
        _say(*(f"git vivary {args.command}: warning: {text(said)}" for said in writes.unsynced()))
    return code


def _short_of_memory(err: BaseException) -> bool:
    """A MemoryError, or how the other ways of asking for memory fail under `ulimit -v`: the dynamic loader
    cannot map a shared library (pygit2's libgit2, libcrypto; a stdlib extension), a thread gets no stack, a
    fork or an mmap gets ENOMEM. A command met each of these as often as a MemoryError, and they came out as a
    traceback. The loader and `threading` give only their words, so those are read."""
    if isinstance(err, ImportError):
        return "failed to map segment from shared object" in str(err)
    if isinstance(err, RuntimeError):
        return str(err) == "can't start new thread"
    if isinstance(err, OSError):
        return err.errno == errno.ENOMEM
    if type(err).__name__ == "GitError":  # pygit2's, from OpenSSL while it loads: "...::malloc failure"
        return str(err).endswith("malloc failure")
    return isinstance(err, MemoryError)


def _say_out_of_memory(command: str | None, err: BaseException) -> None:
    loading = f" (loading {text(_library(err))})" if isinstance(err, ImportError) else ""
    _say(f"git vivary{f' {command}' if command else ''}: ran out of memory before it finished{loading} (this "
         "process's limit, `ulimit -d` or `-v`, or the machine's); raise the limit or run it where more memory is free")


def _library(err: BaseException) -> str:
    """The shared library the loader could not map: its message starts with the file's path."""
    said = str(err)
    return os.path.basename(said.split(": failed to map segment", 1)[0]) or said


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost subcommand's parser the command line chose (`git vivary sync setup` → `sync setup`'s)."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs and subs[0].dest else None
        if name is None or name not in subs[0].choices:
            return parser
        parser = subs[0].choices[name]


# A write to a stream that fails for want of room (a full disk, a quota, /dev/full) or a device gone (a closed
# terminal): `check --json > check.json` on a full CI runner ended in a traceback and exit 1, "findings".
_LOST = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def _output_lost(command: str, err: OSError) -> bool:
    """Say that the output could not be written, when `err` is such a failure of a stream (a file's has a name:
    not this), and drop what is still buffered; False for any other error."""
    if err.errno not in _LOST or err.filename is not None:
        return False
    _reader_left()  # what is buffered would fail again at exit
    _say(f"git vivary {command}: could not write the output ({text(err.strerror or str(err))}), so it is cut "
         "short; free some space, or send it elsewhere, and run the command again")
    return True


def _say(*lines: str) -> None:
    try:
        for line in lines:
            print(line, file=sys.stderr)
    except BrokenPipeError:  # `2>&1 | head`: nobody reads our stderr either
        _reader_left(sys.stderr)
    except OSError as err:  # a full disk under stderr too: nothing can be said
        if err.errno not in _LOST:
            raise
        _reader_left(sys.stderr)


def _reader_left(stream: TextIO | None = None) -> None:
    """Send what is still buffered for the stream whose reader left, and later writes, to /dev/null:
    the interpreter's own flush at exit would otherwise fail again and print a warning."""
    import os

    try:
        fd = (stream or sys.stdout).fileno()
    except (AttributeError, OSError, ValueError):  # captured in-process (tests): nothing to redirect
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def cli() -> None:
    """The `git-vivary` console script: `main()`, then leave without freeing what the command built
    (lifetime.py: ~0.2 s of CPU after a cold check of 10,000 notes)."""
    from vivary_git import lifetime

    _standard_streams()
    _utf8_file_names()
    lifetime.start()
    lifetime.leave(main())


def _standard_streams() -> None:
    """Open /dev/null on each of file descriptors 0, 1 and 2 that is closed, as Git does (`sanitize_stdfds`), and
    give Python a stream for it. Started with stdout closed (`>&-`), Python has `sys.stdout = None`: every command
    ended in an AttributeError traceback. With stderr closed, `print(..., file=sys.stderr)` printed to stdout
    instead (a warning inside `graph --json`), and the exit code was 1, even for a clean check. And the first file
    opened would take the free descriptor, where a Git child's messages would then be written. What is written
    there is lost, as with Git; the exit code still tells."""
    try:
        fd = os.open(os.devnull, os.O_RDWR)
        while fd <= 2:  # the lowest free descriptor: each open fills one gap, so at most three
            fd = os.open(os.devnull, os.O_RDWR)
        os.close(fd)
    except OSError:  # no /dev/null to be had: go on as things are
        return
    for name, number in (("stdin", 0), ("stdout", 1), ("stderr", 2)):
        if getattr(sys, name) is None:
            stream = open(number, "r" if number == 0 else "w", closefd=False,  # noqa: SIM115 (the process's own, for good)
                          errors="backslashreplace" if number == 2 else None)
            setattr(sys, name, stream)


def _utf8_file_names() -> None:
    """Run again in Python's UTF-8 mode (PEP 540) where the locale gives file names another encoding (`LC_ALL=C`
    with UTF-8 mode turned off, a Latin-1 or EUC locale): Git's paths are bytes, UTF-8 in practice and read so
    here, and Python would encode a path such as `/home/zoë/notes` back in the locale's encoding and fail on its
    first character outside it, with a traceback. `-X utf8` rather than PYTHONUTF8: `python -I` ignores the
    environment; once in UTF-8 mode this is a no-op, so it runs again at most once. Output keeps the locale's
    encoding (PYTHONIOENCODING, unless set already), so what it cannot spell is escaped as before (docs/output.md)."""
    import codecs

    if sys.flags.utf8_mode or not sys.executable or codecs.lookup(sys.getfilesystemencoding()).name == "utf-8":
        return
    env = dict(os.environ)
    spoken = getattr(sys.stdout, "encoding", None)
    if spoken and "PYTHONIOENCODING" not in env:
        env["PYTHONIOENCODING"] = spoken
    try:
        os.execve(sys.executable, [sys.executable, "-X", "utf8", *sys.orig_argv[1:]], env)
    except OSError:  # no interpreter to be had again: go on as things are
        return


if __name__ == "__main__":
    cli()
