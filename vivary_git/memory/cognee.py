"""cognee: the Cognee provider behind the same seam as vivary-local (`provider = "cognee"`).

Optional and gated. The `cognee` package comes from the `cognee` extra (`pip install 'vivary-git[cognee]'`)
and is imported only inside `_runtime()`, after every gate has passed and after Cognee's environment has
been bound to this workspace; nothing else in vivary-git imports it (doctor asks `find_spec`).

Gates, checked in this order before Cognee is imported (each refusal exits 3 and names the fix):

* approval: `index --yes` while `require_explicit_index = true` (the default), `forget --yes` always;
* `allow_network = true`: Cognee sends note text to a model endpoint, so nothing runs until a person says so;
* a key route: `api_key_env` naming a variable that is set (its value is handed to Cognee as its
  `LLM_API_KEY`; no other key variable is passed on), or `allow_without_api_key = true` for a local model
  server (a placeholder key is passed, so Cognee talks to the configured endpoint instead of switching to
  its keyless local defaults, which download models and install packages at run time).

Environment (`runtime_env`): Cognee's data, system, cache, log and clone roots are `state_path/…`; its
relational, vector and graph stores are the local file ones (SQLite, LanceDB, Ladybug) under them; its
`.env` search is pointed at an empty file of ours, so a `.env` in the workspace (a stranger's file in a
clone) cannot choose where notes are sent; telemetry and tracing are off unless `allow_telemetry = true`;
LiteLLM uses its bundled model map and tokenizer files instead of downloading them. While Cognee is imported
and runs (`_inside`), HOME and the XDG_*_HOME variables point into `state_path/home`. The model endpoints
themselves are Cognee's own settings, read from the process environment (`LLM_PROVIDER`, `LLM_MODEL`,
`LLM_ENDPOINT`, `EMBEDDING_PROVIDER`, `EMBEDDING_MODEL`, `EMBEDDING_ENDPOINT`, `EMBEDDING_DIMENSIONS`).

Mapping (one Cognee dataset per workspace, `snapshot.dataset_name`):

* `index --yes` forgets the previous dataset, then `cognee.remember`s every packet of the current
  privacy-filtered snapshot (add + cognify, no self-improvement pass) and writes the manifest last. Cognee
  names a text document `text_<md5 of its text>`; the manifest maps those names to node ids.
* `recall` refuses unless the manifest's fingerprint (and embedding settings) are the current snapshot's,
  then asks Cognee for CHUNKS (vector search over chunks, no LLM call) and maps each chunk's document back
  to a node through the manifest, keeping only nodes of the current snapshot. Score = 1 - Cognee's
  cosine distance.
* `forget --yes` deletes the dataset from Cognee (a missing one is not an error) and the manifest.

After Cognee deletes a dataset (both above), what its history tables still hold of it (the texts handed to
`add`, what recalls returned) is deleted and its SQLite database vacuumed (SQLite leaves a deleted row's bytes in
place until the page is reused): a forgotten or replaced note must not stay readable in state_path.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import os
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from vivary_git.errors import ConfigError, RefusedError, UsageError, VivaryError
from vivary_git.memory.provider import (
    EDGE_CONTEXT,
    ForgetReport,
    IndexReport,
    RecallFilters,
    RecallHit,
    RecallMode,
    fetch_size,
    normalise_k,
    outbound_map,
)
from vivary_git.memory.snapshot import PACKET_FORMAT, MemoryEdge, MemorySnapshot, build_snapshot, dataset_name, packets

if TYPE_CHECKING:
    from vivary_git.memory.config import CogneeConfig, MemoryConfig
    from vivary_git.memory.state import LocalStateStore
    from vivary_git.workspace import Workspace

__all__ = [
    "INSTALL_HINT",
    "PROVIDER",
    "TESTED_COGNEE",
    "CogneeError",
    "CogneeManifest",
    "CogneeMemory",
    "CogneeStatus",
    "doctor",
    "runtime_env",
    "status",
]

PROVIDER = "cognee"
TESTED_COGNEE = "1.6.5"  # the version the `cognee` extra pins and tests/test_cognee_e2e.py runs
INSTALL_HINT = "pip install 'vivary-git[cognee]'"
STATE_FORMAT = 1
MANIFEST = "manifest.json"
ENV_FILE = "cognee.env"
KEYLESS_PLACEHOLDER = "vivary-no-key"  # what Cognee gets as LLM_API_KEY under allow_without_api_key
_MAX_CHUNKS = 1000

# Cognee reads these to decide where its state goes or which store it uses: bound to state_path, or removed
# so the local file stores under it are used.
_STATE_DIRS = {
    "DATA_ROOT_DIRECTORY": "data",
    "SYSTEM_ROOT_DIRECTORY": "system",
    "CACHE_ROOT_DIRECTORY": "cache",
    "COGNEE_LOGS_DIR": "logs",
    "COGNEE_REPOS_DIR": "repos",
}
_FIXED = {
    "STORAGE_BACKEND": "local",
    "DB_PROVIDER": "sqlite",
    "VECTOR_DB_PROVIDER": "lancedb",
    "GRAPH_DATABASE_PROVIDER": "ladybug",
    # The graph is extracted by the configured LLM; never by GLiNER, which Cognee would install at run time.
    "GRAPH_EXTRACTOR": "llm",
    "GLINER_AUTO_INSTALL": "false",
    # LiteLLM fetches its model price map from the internet at import unless told to use its bundled copy.
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}
_REMOVED = (
    "DB_PATH", "DB_NAME", "DB_HOST", "DB_URL", "VECTOR_DB_URL", "VECTOR_DB_KEY", "GRAPH_DATABASE_URL",
    "GRAPH_FILE_PATH", "STORAGE_BUCKET_NAME", "EMBEDDING_API_KEY", "LLM_API_KEY",
)
_TELEMETRY_OFF = {
    "TELEMETRY_DISABLED": "1",
    "COGNEE_TRACING_ENABLED": "false",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "DO_NOT_TRACK": "1",
}
# The model settings a Cognee index depends on: recall refuses when they changed since the index.
_EMBEDDING_VARS = ("EMBEDDING_PROVIDER", "EMBEDDING_MODEL", "EMBEDDING_DIMENSIONS", "EMBEDDING_ENDPOINT")


class CogneeError(VivaryError):
    """Cognee itself failed (an endpoint down, a model answer it could not use). Exit 2."""


class CogneeManifest(msgspec.Struct, frozen=True):
    """Binds the Cognee dataset to one snapshot. The contract's keys first."""

    provider: str
    dataset: str
    fingerprint: str
    nodes: int
    edges: int
    format: int
    packet_format: int
    cognee_version: str
    embedding: str  # EMBEDDING_* settings the dataset was embedded with
    documents: dict[str, str]  # Cognee document name (text_<md5 of the packet>) -> node id
    tree: str | None
    source: str


# --- gates and environment --------------------------------------------------------------------------


def installed() -> bool:
    """Whether the `cognee` package is importable, without importing it."""
    try:
        return importlib.util.find_spec("cognee") is not None
    except (ImportError, ValueError):
        return False


def state_store(ws: Workspace, cfg: MemoryConfig) -> LocalStateStore:
    """Cognee's state folder, `[memory.cognee] state_path` under the workspace root (config.py keeps it under
    `.vivary/`): a folder in the work tree, so used only as memory/statefolder.py allows (Git ignores it and no
    file in it is tracked, else exit 3, before anything in it is read or Cognee runs); the manifest is read
    back only as this machine wrote it."""
    from vivary_git.memory.statefolder import work_tree_store

    return work_tree_store(ws, cfg.memory.cognee.state_path or ".vivary/memory/cognee", "memory.cognee.state_path")


def _where(cfg: MemoryConfig) -> str:
    return cfg.source or ".vivary/memory.toml"


def check_gates(cfg: MemoryConfig, action: str, environ: Mapping[str, str] | None = None) -> None:
    """Refuse (exit 3) unless network use is allowed and a key route is configured and usable."""
    env = os.environ if environ is None else environ
    c = cfg.memory.cognee
    where = _where(cfg)
    if not c.allow_network:
        raise RefusedError(
            f"{action} sends note text to the model endpoints Cognee is configured with, so it needs your "
            f"explicit permission: set `allow_network = true` under [memory.cognee] in {where} (it is false by "
            "default; docs/memory.md#cognee)"
        )
    if c.api_key_env:
        if not env.get(c.api_key_env, "").strip():
            raise RefusedError(
                f"{action} needs the API key named by `api_key_env` in {where}, but the environment variable "
                f"{c.api_key_env} is not set; export it (the key never goes in the file)"
            )
    elif not c.allow_without_api_key:
        raise RefusedError(
            f"{action} needs a key route in {where}: name the environment variable that holds the model key in "
            "`api_key_env` under [memory.cognee], or set `allow_without_api_key = true` for a local model server "
            "that needs none"
        )


def _litellm_tokenizers() -> str | None:
    """LiteLLM's bundled tiktoken files, so tiktoken reads them instead of downloading (LiteLLM does the same
    when it is imported first). Found without importing LiteLLM."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    for base in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(base) / "litellm_core_utils" / "tokenizers"
        if path.is_dir():
            return str(path)
    return None


def runtime_env(state: Path, c: CogneeConfig, environ: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """(variables to set, variables to remove) that bind Cognee to `state` and to the gates, computed from
    `environ`. Pure: `_bind` applies it to the process before Cognee is imported."""
    put: dict[str, str] = {key: str(state / sub) for key, sub in _STATE_DIRS.items()}
    put["COGNEE_ENV_FILE"] = str(state / ENV_FILE)
    put.update(_FIXED)
    drop = [k for k in _REMOVED if k in environ]
    if not c.allow_telemetry:
        put.update(_TELEMETRY_OFF)
        drop += [k for k in environ if k.startswith(("LANGFUSE_", "OTEL_EXPORTER_"))]
    if c.api_key_env:
        put["LLM_API_KEY"] = environ.get(c.api_key_env, "")
    elif c.allow_without_api_key:
        put["LLM_API_KEY"] = KEYLESS_PLACEHOLDER
    if "TIKTOKEN_CACHE_DIR" not in environ:
        bundled = _litellm_tokenizers()
        if bundled is not None:
            put["TIKTOKEN_CACHE_DIR"] = bundled
    put.setdefault("LOG_LEVEL", environ.get("LOG_LEVEL", "ERROR"))
    drop = [k for k in dict.fromkeys(drop) if k not in put]
    return put, drop


def _embedding_settings(environ: Mapping[str, str]) -> str:
    return "; ".join(f"{k}={environ.get(k, '')}" for k in _EMBEDDING_VARS)


def _prepare_state(state: Path) -> None:
    """Create the state folder with a `.gitignore` of `*` (Cognee keeps copies of the indexed notes and its
    databases there: derived data, never to be committed) and the empty file Cognee's `.env` search gets."""
    if state.is_symlink() or (state.exists() and not state.is_dir()):
        raise RefusedError(f"{state} (memory.cognee.state_path) is not a plain folder; remove it or choose another "
                           "state_path under .vivary/")
    state.mkdir(parents=True, exist_ok=True)
    for sub in (*_STATE_DIRS.values(), "home"):
        if (state / sub).is_symlink():
            raise RefusedError(f"{state / sub} is a symbolic link; remove it (memory.cognee.state_path holds only "
                               "Cognee's derived state, in plain folders)")
    for name, text in ((".gitignore", "# Cognee's derived state: never commit it\n*\n"), (ENV_FILE, "")):
        path = state / name
        if path.is_symlink():
            path.unlink()
        # Cognee reads its .env from ENV_FILE: one it did not get from us (empty) could choose where notes go.
        if not path.is_file() or (name == ENV_FILE and path.stat().st_size):
            path.write_text(text, encoding="utf-8")


def _bind(state: Path, c: CogneeConfig) -> None:
    put, drop = runtime_env(state, c, os.environ)
    for key in drop:
        os.environ.pop(key, None)
    os.environ.update(put)


# --- the runtime --------------------------------------------------------------------------------------


# While Cognee runs, the home folder its libraries see is state_path/home: Ladybug (its graph store) makes its
# extension folder `~/.lbdb` when it loads its JSON extension, and other libraries keep caches under `~/.cache`.
_HOME_VARS = {"HOME": "", "XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache",
              "XDG_DATA_HOME": ".local/share", "XDG_STATE_HOME": ".local/state"}


@contextlib.contextmanager
def _inside(state: Path) -> Iterator[None]:
    """Around Cognee's import and every call into it: the home variables point into state_path/home (restored
    afterwards: Git, run by vivary itself, must keep reading the user's own configuration), and stdout goes to
    stderr (Cognee and LiteLLM print progress and notices there; stdout is ours, e.g. JSON)."""
    home = state / "home"
    if home.is_symlink():
        raise RefusedError(f"{home} is a symbolic link; remove it (it holds only Cognee's derived state)")
    home.mkdir(exist_ok=True)
    saved = {key: os.environ.get(key) for key in _HOME_VARS}
    os.environ.update({key: str(home / sub) if sub else str(home) for key, sub in _HOME_VARS.items()})
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _runtime(state: Path, c: CogneeConfig) -> Any:
    """Bind the environment, then import Cognee (the only place it is imported)."""
    if not installed():
        raise ConfigError(f"provider = \"cognee\" needs the Cognee library, which is not installed: {INSTALL_HINT}")
    _prepare_state(state)
    _bind(state, c)
    with _inside(state):
        import cognee

    return cognee


def _failure(action: str, err: BaseException, secret: str = "") -> CogneeError:
    first = (str(err).strip().splitlines() or [""])[0][:300]
    if secret:
        first = first.replace(secret, "***")
    return CogneeError(
        f"Cognee could not {action}: {type(err).__name__}: {first}; check the model endpoints Cognee is configured "
        "with (LLM_ENDPOINT, EMBEDDING_ENDPOINT and their models) and that they answer, then run it again"
    )


# Cognee's history tables, which keep note text after `cognee.forget` deletes the dataset: `pipeline_runs.run_info`
# holds the texts handed to `add`, `results.value` what a recall returned (chunk text), `queries.text` the question.
# Rows of a deleted dataset (its id no longer in `datasets`) are removed; so are history rows with no dataset.
_HISTORY = ("pipeline_runs", "queries", "results")


def _scrub(state: Path) -> None:
    """Remove what Cognee keeps of deleted datasets in its SQLite database (its history tables), then rewrite
    the file so the deleted rows leave no bytes behind (SQLite keeps a deleted row's content in its page until
    the page is reused): forgotten notes must be gone from state_path. Called after `cognee.forget`, before
    anything is added again (a dataset of the same name gets the same id)."""
    import sqlite3

    db = state / "system" / "databases" / "cognee_db"
    if db.is_symlink() or not db.is_file():
        return
    try:
        con = sqlite3.connect(db, timeout=60, isolation_level=None)
        try:
            tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "datasets" in tables:
                con.execute("BEGIN IMMEDIATE")
                for table in _HISTORY:
                    if table not in tables:
                        continue
                    gone = "dataset_id NOT IN (SELECT id FROM datasets)"
                    where = f"dataset_id IS NOT NULL AND {gone}" if table == "pipeline_runs" else \
                        f"dataset_id IS NULL OR {gone}"
                    con.execute(f"DELETE FROM {table} WHERE {where}")  # table names are ours, fixed
                con.execute("COMMIT")
            con.execute("VACUUM")
        finally:
            con.close()
    except sqlite3.Error as err:
        raise CogneeError(f"could not clear deleted notes from Cognee's database {db} ({err}); run the command "
                          "again") from None


def _missing_dataset(err: BaseException) -> bool:
    return type(err).__name__ == "DatasetNotFoundError" or (
        "dataset" in str(err).lower() and "not found" in str(err).lower())


def document_name(text: str) -> str:
    """The name Cognee gives a text it is handed (`text_` + md5 of its UTF-8 bytes)."""
    return "text_" + hashlib.md5(text.encode("utf-8"), usedforsecurity=False).hexdigest()


def _sendable(packet: str) -> str:
    # A name that is not UTF-8 keeps its text form in packets (escape.name); Cognee stores UTF-8 only.
    return packet.encode("utf-8", "replace").decode("utf-8")


# --- status (doctor) ----------------------------------------------------------------------------------

StatusName = Literal["disabled", "not-cognee", "unavailable", "misconfigured", "stale", "healthy"]


class CogneeStatus(msgspec.Struct, frozen=True):
    """The Cognee adapter's own doctor: the six states of the contract. `indexed` tells a stale index from
    none at all; nothing here imports Cognee or calls a model."""

    status: StatusName
    provider: str
    dataset: str
    detail: str
    fix: str = ""
    indexed: bool = False
    gates_open: bool = False
    manifest: str = ""


def _read_manifest(store: LocalStateStore) -> CogneeManifest | None:
    """The manifest, as this machine wrote it; None when there is none, it is damaged, or it is not ours."""
    data = store.get(MANIFEST)
    if data is None:
        return None
    try:
        return msgspec.json.decode(data, type=CogneeManifest)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def status(cfg: MemoryConfig, root: Path, current: Callable[[], str | None],
           environ: Mapping[str, str] | None = None, *, ws: Workspace | None = None) -> CogneeStatus:
    """Where the Cognee provider of the workspace at `root` stands. `current()` gives the snapshot fingerprint
    (None: no tree to compare with); it is called only when there is a manifest to compare it to. The state
    folder is looked in only with the open workspace `ws` (its Git decides whether the folder may be used)."""
    env = os.environ if environ is None else environ
    dataset = dataset_name(root, cfg.memory.cognee.dataset)
    if not cfg.enabled:
        return CogneeStatus("disabled", cfg.memory.provider, dataset, "semantic memory is not enabled")
    if cfg.provider != PROVIDER:
        return CogneeStatus("not-cognee", cfg.provider, dataset, f"provider is {cfg.provider!r}, not \"cognee\"")
    if not installed():
        return CogneeStatus("unavailable", PROVIDER, dataset, "provider = \"cognee\" but the Cognee library is not "
                            "installed", f"{INSTALL_HINT}   # a human gate")
    c = cfg.memory.cognee
    if c.api_key_env and not env.get(c.api_key_env, "").strip():
        return CogneeStatus("misconfigured", PROVIDER, dataset, f"api_key_env names {c.api_key_env}, which is not "
                            "set in this environment", f"export {c.api_key_env}=...   # the key, never in the file")
    if not c.api_key_env and not c.allow_without_api_key:
        return CogneeStatus("misconfigured", PROVIDER, dataset, "no key route: neither api_key_env nor "
                            "allow_without_api_key = true under [memory.cognee]",
                            "name the key's environment variable in api_key_env (or allow_without_api_key = true "
                            "for a local model server)")
    gates = c.allow_network
    if ws is None:
        return CogneeStatus("stale", PROVIDER, dataset, "no Cognee index yet (no commit to open the workspace at)",
                            "git vivary index --yes   # approval", gates_open=gates)
    try:
        store = state_store(ws, cfg)
    except RefusedError as err:
        return CogneeStatus("misconfigured", PROVIDER, dataset, str(err), "as the detail says; then "
                            "`git vivary index --yes`", gates_open=gates)
    path = store.directory / MANIFEST
    manifest = _read_manifest(store)
    if manifest is None:
        if path.exists() or path.is_symlink():
            return CogneeStatus("stale", PROVIDER, dataset, f"the index manifest {path} is damaged or was not "
                                "written by this machine",
                                "git vivary index --yes", indexed=True, gates_open=gates, manifest=str(path))
        return CogneeStatus("stale", PROVIDER, dataset, "no Cognee index yet", "git vivary index --yes   # approval",
                            gates_open=gates, manifest=str(path))
    fp = current()
    if fp is not None and (fp != manifest.fingerprint or manifest.dataset != dataset
                           or manifest.embedding != _embedding_settings(env)):
        return CogneeStatus("stale", PROVIDER, dataset, f"the Cognee index ({path}) was built from other notes or "
                            "other embedding settings than now", "git vivary index --yes   # recall refuses a stale "
                            "index", indexed=True, gates_open=gates, manifest=str(path))
    return CogneeStatus("healthy", PROVIDER, dataset, f"Cognee index matches the current snapshot "
                        f"({manifest.fingerprint[:12]})", indexed=True, gates_open=gates, manifest=str(path))


def doctor(ws: Workspace) -> CogneeStatus:
    """The adapter doctor for `ws` (the library form; `git vivary doctor` reports the same in its memory block)."""
    from vivary_git.memory.config import load_memory_config

    cfg = load_memory_config(ws)

    def current() -> str | None:
        try:
            return _snapshot(ws, cfg).fingerprint
        except VivaryError:
            return ""

    return status(cfg, ws.source.root, current, ws=ws)


def _snapshot(ws: Workspace, cfg: MemoryConfig) -> MemorySnapshot:
    return build_snapshot(ws, cfg.policy(), provider=cfg.provider, model=cfg.model, dataset_label=cfg.dataset_label,
                          with_fields=False)


# --- the provider -------------------------------------------------------------------------------------


class CogneeMemory:
    """The Cognee provider for one workspace at one tree. Library form of index/recall/forget."""

    provider = PROVIDER

    def __init__(self, ws: Workspace, cfg: MemoryConfig | None = None) -> None:
        from vivary_git.memory.config import load_memory_config

        self.ws = ws
        self.cfg = cfg if cfg is not None else load_memory_config(ws)
        if self.cfg.provider != PROVIDER:
            raise ConfigError(f"{_where(self.cfg)} does not enable provider = \"cognee\"")
        self._snap: MemorySnapshot | None = None
        self._store: LocalStateStore | None = None

    @property
    def dataset(self) -> str:
        return dataset_name(self.ws.source.root, self.cfg.dataset_label)

    @property
    def store(self) -> LocalStateStore:
        """The state folder, decided on once (`state_store`)."""
        if self._store is None:
            self._store = state_store(self.ws, self.cfg)
        return self._store

    @property
    def state(self) -> Path:
        return self.store.directory

    def snapshot(self) -> MemorySnapshot:
        if self._snap is None:
            self._snap = _snapshot(self.ws, self.cfg)
        return self._snap

    def manifest(self) -> CogneeManifest | None:
        return _read_manifest(self.store)

    def _cognee(self) -> Any:
        return _runtime(self.state, self.cfg.memory.cognee)

    def _secret(self) -> str:
        env = self.cfg.memory.cognee.api_key_env
        return os.environ.get(env, "") if env else ""

    # --- index ---------------------------------------------------------------------------------------

    def index(self, *, approved: bool) -> IndexReport:
        """Replace the workspace's Cognee dataset with the current snapshot's packets (after the gates)."""
        started = time.perf_counter()
        c = self.cfg.memory.cognee
        if not approved and c.require_explicit_index:
            raise RefusedError(
                "indexing sends the text of every public note to Cognee and the model endpoints it is configured "
                "with, so it needs your approval: run `git vivary index --yes` (or set "
                f"`require_explicit_index = false` under [memory.cognee] in {_where(self.cfg)})"
            )
        check_gates(self.cfg, "indexing with Cognee")
        snap = self.snapshot()
        rendered = [(node, _sendable(text)) for node, text in packets(self.ws, snap)]
        documents = {document_name(text): node.id for node, text in rendered}
        embedding = _embedding_settings(os.environ)
        cognee = self._cognee()
        (self.state / MANIFEST).unlink(missing_ok=True)  # until the new dataset is complete, there is no index
        secret = self._secret()

        async def run() -> None:
            try:
                await cognee.forget(dataset=snap.dataset)
            except Exception as err:
                if not _missing_dataset(err):
                    raise _failure("remove the previous dataset", err, secret) from None
            _scrub(self.state)  # before adding: the new dataset gets the old one's id
            if rendered:
                try:
                    await cognee.remember([text for _, text in rendered], dataset_name=snap.dataset,
                                          self_improvement=False)
                except Exception as err:
                    raise _failure("index the notes", err, secret) from None

        with _inside(self.state):
            asyncio.run(run())
        manifest = CogneeManifest(
            provider=PROVIDER, dataset=snap.dataset, fingerprint=snap.fingerprint, nodes=len(snap.nodes),
            edges=len(snap.edges), format=STATE_FORMAT, packet_format=PACKET_FORMAT,
            cognee_version=str(getattr(cognee, "__version__", "")), embedding=embedding, documents=documents,
            tree=self.ws.source.tree_id, source=self.ws.source.label,
        )
        self.store.put(MANIFEST, msgspec.json.encode(manifest))
        return IndexReport(
            ok=True, provider=PROVIDER, dataset=snap.dataset, dry_run=False, indexed=len(snap.nodes),
            would_index=len(snap.nodes), edges=len(snap.edges), private=snap.private_count,
            fingerprint=snap.fingerprint, enabled=True, embedded=len(rendered), rebuilt=True,
            state=str(self.state), seconds=round(time.perf_counter() - started, 3), left_out=snap.left_out,
        )

    # --- recall --------------------------------------------------------------------------------------

    def _verified(self) -> tuple[MemorySnapshot, CogneeManifest]:
        check_gates(self.cfg, "recall from Cognee")
        manifest = self.manifest()
        path = self.state / MANIFEST
        if manifest is None:
            if path.exists() or path.is_symlink():
                raise RefusedError(f"the Cognee index manifest {path} is damaged, or was not written by this "
                                   "machine; run `git vivary index --yes` to rebuild it")
            raise RefusedError(f"there is no Cognee index for this workspace yet (looked for {path}); run "
                               "`git vivary index --yes` to build it")
        snap = self.snapshot()
        if manifest.format != STATE_FORMAT or manifest.dataset != snap.dataset:
            raise RefusedError(f"the Cognee index manifest {path} is from another version or dataset; run "
                               "`git vivary index --yes` to rebuild it")
        if manifest.fingerprint != snap.fingerprint:
            raise RefusedError(
                "the Cognee index is stale: it was built from a different snapshot of the notes "
                f"(index {manifest.fingerprint[:12]}, now {snap.fingerprint[:12]}: notes, links or privacy rules "
                "changed since the last index); run `git vivary index --yes` to replace it"
            )
        if manifest.embedding != _embedding_settings(os.environ):
            raise RefusedError(
                "the Cognee index was embedded with other settings than the environment has now "
                f"({manifest.embedding or 'none'}); restore them or run `git vivary index --yes` to embed again"
            )
        return snap, manifest

    def recall(self, query: str, *, k: int = 10, filters: RecallFilters | None = None,
               mode: RecallMode = "hybrid") -> list[RecallHit]:
        return self.recall_many([query], k=k, filters=filters, mode=mode)[0]

    def recall_many(self, queries: Sequence[str], *, k: int = 10, filters: RecallFilters | None = None,
                    mode: RecallMode = "hybrid") -> list[list[RecallHit]]:
        """One answer per query, in order, from one Cognee runtime. `mode` is vivary-local's: Cognee answers
        from its own vector search over chunks whatever it is."""
        for q in queries:
            if not q.strip():
                raise UsageError('provide a recall query, e.g. `git vivary recall "how do we rotate keys?"`')
        k = normalise_k(k)
        filters = filters or RecallFilters()
        wanted = fetch_size(k, filters.active)
        snap, manifest = self._verified()
        if not queries:
            return []
        cognee = self._cognee()
        chunks = min(max(3 * wanted, wanted + 20), _MAX_CHUNKS)
        secret = self._secret()

        async def run() -> list[list[Any]]:
            out = []
            for q in queries:
                try:
                    out.append(list(await cognee.recall(q, query_type=cognee.SearchType.CHUNKS,
                                                        datasets=[snap.dataset], top_k=chunks) or []))
                except Exception as err:
                    if _missing_dataset(err):
                        raise RefusedError(
                            f"Cognee has no dataset {snap.dataset} although the manifest says it was indexed "
                            f"(its state in {self.state} was removed?); run `git vivary index --yes` to rebuild it"
                        ) from None
                    raise _failure("recall", err, secret) from None
            return out

        with _inside(self.state):
            raw = asyncio.run(run())
        nodes = {n.id: n for n in snap.nodes}
        outbound = outbound_map(snap)
        touching: dict[str, list[MemoryEdge]] = {}
        for e in snap.edges:
            touching.setdefault(e.source_id, []).append(e)
            if e.target_id != e.source_id:
                touching.setdefault(e.target_id, []).append(e)
        return [self._hits(items, manifest, nodes, outbound, touching, k, wanted, filters) for items in raw]

    @staticmethod
    def _hits(items: list[Any], manifest: CogneeManifest, nodes: Mapping[str, Any],
              outbound: Mapping[str, list[MemoryEdge]], touching: Mapping[str, list[MemoryEdge]], k: int,
              wanted: int, filters: RecallFilters) -> list[RecallHit]:
        hits: list[RecallHit] = []
        seen: set[str] = set()
        for item in items:
            meta = getattr(item, "metadata", None)
            name = meta.get("document_name") if isinstance(meta, dict) else None
            if not isinstance(name, str):
                continue
            node_id = manifest.documents.get(name.removesuffix(".txt"))
            node = nodes.get(node_id) if node_id is not None else None
            if node is None or node.id in seen:
                continue  # not a document of this index, or not in the current snapshot: never returned
            seen.add(node.id)
            if len(seen) > wanted:
                break
            if filters.active and not filters.keep(node, outbound.get(node.id, ())):
                continue
            distance = getattr(item, "score", None)
            score = 1.0 - float(distance) if isinstance(distance, int | float) else 0.0
            chunk = meta.get("chunk_index") if isinstance(meta, dict) else None
            hits.append(RecallHit(
                node_id=node.id, type=node.type, path=node.path, score=round(score, 6),
                reason=f"cognee chunk match (chunk {chunk}, cosine distance {float(distance or 0):.3f})",
                source="provider", edge_context=list(touching.get(node.id, []))[:EDGE_CONTEXT], provider=PROVIDER,
            ))
            if len(hits) == k:
                break
        return hits

    # --- forget --------------------------------------------------------------------------------------

    def forget(self, *, approved: bool) -> ForgetReport:
        """Delete this workspace's dataset from Cognee, and the manifest."""
        state = self.state
        if not approved:
            raise RefusedError(
                f"forget deletes this workspace's Cognee dataset {self.dataset} (state in {state}); run "
                "`git vivary forget --yes` to confirm (the notes themselves are not touched)"
            )
        try:
            check_gates(self.cfg, "forgetting the Cognee dataset")
        except RefusedError as err:
            raise RefusedError(f"{err}; or delete the folder {state} yourself: it holds only Cognee's derived "
                               "state") from None
        had_manifest = (state / MANIFEST).exists()
        removed = had_manifest
        if state.is_dir():
            cognee = self._cognee()
            secret = self._secret()

            async def run() -> bool:
                try:
                    await cognee.forget(dataset=self.dataset)
                except Exception as err:
                    if _missing_dataset(err):
                        return False
                    raise _failure("forget the dataset", err, secret) from None
                return True

            with _inside(state):
                removed = asyncio.run(run()) or removed
            _scrub(state)
        (state / MANIFEST).unlink(missing_ok=True)
        return ForgetReport(ok=True, provider=PROVIDER, dataset=self.dataset, removed=removed, state=str(state))
