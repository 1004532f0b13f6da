"""The layout's rules, read from the source (nothing is imported), every `import` counted: at the top, under
TYPE_CHECKING or inside a function.

* The memory seam (`memory/`'s own modules: config, snapshot, provider, state, statefolder, lock) imports no
  job of `memory/`: it is what every job and every provider builds on.
* A provider (`memory/local/`, `memory/cognee.py`) imports the seam and the package's shared modules, never
  another provider nor another job of `memory/`.
* `commands/` and `mcp/` import a job's public modules, the ones its `__init__` names under "Public modules",
  never its internals.
* No module is over 1,000 lines: past that it is doing two jobs.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "vivary_git"
SEAM = ("config", "snapshot", "provider", "state", "statefolder", "lock")  # memory/'s own modules
PROVIDERS = ("vivary_git.memory.local", "vivary_git.memory.cognee")
CLIENTS = ("vivary_git.commands", "vivary_git.mcp")
MAX_LINES = 1000


def modules(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module and package of the tree at `package`."""
    names: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        parts = (package.name, *path.relative_to(package).with_suffix("").parts)
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def imports(name: str, path: Path, names: dict[str, Path]) -> set[str]:
    """The package's modules `name` imports: `from pkg import mod` names the module, `from mod import x` the
    module, a name that is no module of the package its nearest enclosing one."""
    found: set[str] = set()

    def add(target: str) -> None:
        while target and target not in names:
            target = target.rpartition(".")[0]
        if target and target != name:
            found.add(target)

    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if is_package else name.split(".")[:-1]
                here = here[: len(here) - node.level + 1]
                base = ".".join(here + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                add(full if full in names else base)
    return found


def public_modules(init: Path) -> set[str] | None:
    """The modules a package's `__init__` docstring names under "Public modules" (`- \\`name\\`: ...` items), or None
    when it names none (the package has no internals to keep)."""
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    _, found, rest = doc.partition("Public modules")
    if not found:
        return None
    items = re.findall(r"^- (.*?):", rest, flags=re.M)  # "- `a`, `b`: what they are"
    return {name for item in items for name in re.findall(r"`(\w+)`", item)}


def within(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def problems(package: Path) -> list[str]:
    names = modules(package)
    root = package.name
    memory = f"{root}.memory"
    seam = {f"{memory}.{m}" for m in SEAM} | {memory}
    jobs = {n for n, p in names.items() if n.count(".") == 2 and within(n, memory) and p.name == "__init__.py"}
    providers = tuple(p.replace("vivary_git", root, 1) for p in PROVIDERS)
    clients = tuple(c.replace("vivary_git", root, 1) for c in CLIENTS)
    rooms = {n: public_modules(p) for n, p in names.items() if p.name == "__init__.py" and n != root}
    out: list[str] = []
    for name, path in sorted(names.items()):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            out.append(f"{name} has {lines} lines (at most {MAX_LINES})")
        targets = imports(name, path, names)
        if name in seam:
            out += [f"{name} (the memory seam) imports {t}, a job of memory/" for t in sorted(targets)
                    if any(within(t, j) for j in jobs | {f"{memory}.cognee"})]
        mine = next((p for p in providers if within(name, p)), None)
        if mine is not None:
            out += [f"{name} (a provider) imports {t}: only the seam and the package's shared modules"
                    for t in sorted(targets) if within(t, memory) and t not in seam and not within(t, mine)]
        if any(within(name, c) for c in clients):
            for t in sorted(targets):
                room = max((r for r in rooms if within(t, r) and t != r), key=len, default=None)
                public = rooms.get(room) if room is not None else None
                if room is not None and public is not None and t[len(room) + 1:].split(".")[0] not in public:
                    out.append(f"{name} imports {t}, an internal of {room} (public: {', '.join(sorted(public))})")
    return out


def test_the_layout_keeps_its_rules() -> None:
    found = problems(PACKAGE)
    assert not found, "\n".join(found)


def test_memory_holds_the_seam_a_provider_and_its_jobs_folders() -> None:
    top = {p.stem for p in (PACKAGE / "memory").glob("*.py")} - {"__init__"}
    assert top == {*SEAM, "cognee"}, f"memory/ holds {sorted(top - {*SEAM, 'cognee'})} beside the seam"


def test_every_job_of_memory_names_its_public_modules() -> None:
    for init in sorted((PACKAGE / "memory").glob("*/__init__.py")):
        public = public_modules(init)
        assert public, f"{init.parent.name}/__init__.py names no public module"
        missing = {m for m in public if not (init.parent / f"{m}.py").is_file()}
        assert not missing, f"{init.parent.name}/__init__.py names modules it does not have: {sorted(missing)}"


@pytest.mark.parametrize("planted", ["provider", "client", "seam", "length"])
def test_a_planted_violation_is_found(tmp_path: Path, planted: str) -> None:
    pkg = tmp_path / "vivary_git"
    for folder in ("memory/local", "memory/writes", "commands", "mcp"):
        (pkg / folder).mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("")
    (pkg / "memory" / "__init__.py").write_text('"""The seam."""\n')
    (pkg / "memory" / "config.py").write_text("from vivary_git import errors\n")
    (pkg / "memory" / "cognee.py").write_text("from vivary_git.memory import config\n")
    (pkg / "memory" / "local" / "__init__.py").write_text('"""Local.\n\nPublic modules:\n\n- `provider`: it\n"""\n')
    (pkg / "memory" / "local" / "provider.py").write_text("from . import index\nfrom ..config import X\n")
    (pkg / "memory" / "local" / "index.py").write_text("def f():\n    from vivary_git.errors import E\n")
    (pkg / "memory" / "writes" / "__init__.py").write_text('"""Writes.\n\nPublic modules:\n\n- `commits`: it\n"""\n')
    (pkg / "memory" / "writes" / "commits.py").write_text("")
    (pkg / "memory" / "writes" / "notefile.py").write_text("")
    (pkg / "commands" / "__init__.py").write_text("")
    (pkg / "commands" / "index.py").write_text("def run():\n    from vivary_git.memory.local.provider import M\n")
    (pkg / "mcp" / "__init__.py").write_text("")
    (pkg / "mcp" / "service.py").write_text("from vivary_git.memory.writes import commits\n")
    assert problems(pkg) == []
    if planted == "provider":  # a provider importing another, lazily
        (pkg / "memory" / "local" / "index.py").write_text("def f():\n    from vivary_git.memory import cognee\n")
        expected = "vivary_git.memory.local.index (a provider) imports vivary_git.memory.cognee"
    elif planted == "client":  # the MCP server reaching into a job's internals
        (pkg / "mcp" / "service.py").write_text("from vivary_git.memory.writes import notefile\n")
        expected = "vivary_git.mcp.service imports vivary_git.memory.writes.notefile, an internal"
    elif planted == "seam":  # the seam depending on a job, for types only
        typed = "if TYPE_CHECKING:\n    from vivary_git.memory.writes.commits import C\n"
        (pkg / "memory" / "config.py").write_text(typed)
        expected = "vivary_git.memory.config (the memory seam) imports vivary_git.memory.writes.commits"
    else:
        (pkg / "errors.py").write_text("x = 1\n" * (MAX_LINES + 1))
        expected = f"vivary_git.errors has {MAX_LINES + 1} lines"
    found = problems(pkg)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_workspace_stays_a_facade() -> None:
    """`Workspace` is what a command uses (open a tree, its graph, notes and check); the cache tiers are
    tiers.py's and the parse orchestration parses.py's."""
    tree = ast.parse((PACKAGE / "workspace.py").read_text(encoding="utf-8"))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Workspace")
    assert cls.end_lineno is not None and cls.end_lineno - cls.lineno + 1 <= 250
