"""Print where the action's venv lives and the key it is cached under, as `name=value` lines.

Run by action.yml's first step with the runner's Python (standard library only, any Python 3, so
that a too-old Python still gets as far as install.sh's clear message). The venv is cached with
actions/cache between runs, keyed by everything that decides what is in it:

    the runner's OS and machine, the Python (version and path: the venv's scripts point at it),
    and what pip installs: with the default `install`, a digest of this action's own source
    (pyproject.toml and every file under vivary_git/); otherwise the `install` value as given.

    dir=<the venv folder>      key=<the cache key, or empty: do not cache>

An empty key (caching turned off, or `vivary-git` names an executable so nothing is installed)
makes action.yml skip the cache steps.
"""

import hashlib
import os
import platform
import sys

VERSION = "v1"  # bump to drop every cached venv (a change of layout)


def source_digest(root: str) -> str:
    h = hashlib.sha256()
    files = [os.path.join(root, "pyproject.toml")]
    for folder, dirs, names in os.walk(os.path.join(root, "vivary_git")):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        files += [os.path.join(folder, n) for n in sorted(names) if not n.endswith(".pyc")]
    for path in files:
        rel = os.path.relpath(path, root).replace(os.sep, "/")
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        try:
            with open(path, "rb") as f:
                h.update(hashlib.sha256(f.read()).digest())
        except OSError:
            h.update(b"missing")
    return h.hexdigest()


def main() -> int:
    env = os.environ
    venv = os.path.join(env.get("RUNNER_TEMP") or env.get("TMPDIR") or "/tmp", "vivary-git-venv")
    key = ""
    if env.get("VIVARY_CACHE", "true") == "true" and not env.get("VIVARY_GIT"):
        spec = env.get("VIVARY_INSTALL", "")
        what = "source:" + source_digest(env.get("GITHUB_ACTION_PATH", ".")) if not spec else "spec:" + spec
        python = f"{sys.version}\0{os.path.realpath(sys.executable)}"
        digest = hashlib.sha256("\0".join((python, venv, what)).encode("utf-8", "surrogateescape")).hexdigest()
        key = f"vivary-git-venv-{VERSION}-{env.get('RUNNER_OS', platform.system())}-{platform.machine()}-{digest[:32]}"
    if "\n" in venv or "\r" in venv:  # it could not be a step output; install.sh refuses such a path
        venv, key = "", ""
    print(f"dir={venv}")
    print(f"key={key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
