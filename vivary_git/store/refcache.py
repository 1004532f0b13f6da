"""The shared cache as one run uses it (`RefCache`): reads as far as `vivary.cacheTrust` allows, writes on
the tip; and the state API for memory providers.

Deciding *who may be believed* is `RefCache`'s: reads follow `vivary.cacheTrust` (docs/cache.md, "Trust"),
gates read none. The first damage found prints one line and turns the ref cache off for the rest of the
run; callers then recompute.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from vivary_git import escape
from vivary_git.refnames import CACHE_REF
from vivary_git.store.format import StoreBusy, StoreDamaged, StoreNewer, damaged_message
from vivary_git.store.read import Snapshot, ref_tip, written_by
from vivary_git.store.trust import SigningError, _config_bool, newest_verified, signing, trust, verified
from vivary_git.store.write import Changes, Staged, WriteResult, stage, write

if TYPE_CHECKING:
    from vivary_git.git import Repo


def get_state(repo: Repo, provider: str, key: str, name: str) -> bytes | None:
    """A provider's state file, verified; None when absent or when the cache is unreadable (the
    reason is printed once on stderr)."""
    ref = RefCache(repo)
    snap = ref.snapshot()  # only a cache this clone trusts (`vivary.cacheTrust`)
    try:
        return snap.state(provider, key, name) if snap is not None else None
    except StoreDamaged as err:
        print(escape.text(damaged_message(err)), file=sys.stderr)
        return None


def list_states(repo: Repo, provider: str) -> dict[str, list[str]]:
    """KEY -> names of the state files a provider has in the cache commit this clone may read
    (`vivary.cacheTrust`, as `get_state`: none by default); {} when none or when it is damaged (the
    reason is printed once on stderr)."""
    snap = RefCache(repo).snapshot()
    out: dict[str, list[str]] = {}
    for path in sorted(snap.manifest.states if snap is not None else ()):
        _, prov, key, name = path.split("/")
        if prov == provider:
            out.setdefault(key, []).append(name)
    return out


class RefCache:
    """The shared cache for one run, as far as the trust setting lets it be used (docs/cache.md,
    "Trust").

    *Reads* (`get`): none with `read=False` (a gate) or `vivary.cacheTrust = none` (the default); the
    tip with `any`; with `signed`, the newest commit of the chain whose signature `git verify-commit`
    accepts. *Writes* (`write`, and `missing`/`has_tree`, which say what is new) build on the tip; a
    signing writer (`vivary.cacheSign`) only on a tip that verifies, else it starts a new chain.

    The first damage found prints one line and turns the ref cache off for the rest of the run;
    callers then recompute."""

    def __init__(self, repo: Repo, ref: str = CACHE_REF, *, read: bool = True) -> None:
        self.repo = repo
        self.ref = ref
        self.trust = trust(repo) if read else "none"
        self.sign = signing(repo)
        self._snap: Snapshot | None = None
        self._loaded = False
        self._base: Snapshot | None = None
        self._base_loaded = False
        self.damaged = False
        self.newer = False  # a newer vivary-git wrote the cache: nothing is recorded on it this run (`base`)
        self.unwritable = False  # the object store refused a write (`_unwritable`)
        # trees (summary keys) that privacy could not be decided for this run: said once, not tried again (record.py)
        self.refused: set[str] = set()

    def reads(self) -> bool:
        """Whether this run may take entries from the shared cache at all."""
        return self.trust != "none" and not self.damaged

    def snapshot(self) -> Snapshot | None:
        """The cache commit this run may read entries from (None: none it trusts)."""
        if not self._loaded:
            self._loaded = True
            self._snap = None
            try:
                if self.trust == "any":
                    self._snap = Snapshot.load(self.repo, self.ref)
                elif self.trust == "signed":
                    commit = newest_verified(self.repo, self.ref)
                    self._snap = Snapshot.load(self.repo, self.ref, commit=commit) if commit else None
            except StoreDamaged as err:
                self._fail(err)
        return self._snap

    def base(self) -> Snapshot | None:
        """The cache commit the next write builds on (None: a new chain)."""
        if not self._base_loaded:
            self._base_loaded = True
            self._base = None
            try:
                tip = ref_tip(self.repo, self.ref)  # StoreDamaged when the ref does not parse
                if tip is not None and (not self.sign or verified(self.repo, tip)):
                    self._base = Snapshot.load(self.repo, self.ref, commit=tip)
                if tip is not None and self._base is None:
                    written = written_by(self.repo, self.ref, commit=tip)
                    self.newer = written is not None and written.newer()
            except StoreDamaged as err:
                self._fail(err)
        return self._base

    def _fail(self, err: StoreDamaged) -> None:
        if not self.damaged:
            print(escape.text(damaged_message(err)), file=sys.stderr)
        self.damaged = True
        self._snap = self._base = None

    def get(self, kind: str, keys: Iterable[str]) -> dict[str, Any]:
        snap = self.snapshot()
        if snap is None:
            return {}
        try:
            return snap.get(kind, keys)
        except StoreDamaged as err:
            self._fail(err)
            return {}

    def has_tree(self, key: str) -> bool:
        """Whether the tree is recorded already, as far as this run goes: a newer vivary-git's cache counts as
        having it, since this one records nothing on that cache."""
        base = self.base()
        return self.newer or (base is not None and key in base.manifest.trees)

    def missing(self, kind: str, keys: Iterable[str]) -> list[str]:
        base = self.base()
        return list(keys) if base is None else base.missing(kind, keys)

    def stage(self, changes: Changes) -> Staged | None:
        """Write the objects of `changes`' entries ahead of `write` (store/write.py `stage`); None when the
        cache is damaged or a signature cannot be checked (then `write` does it all, or says why not)."""
        if self.damaged or self.unwritable or self.newer or changes.empty():
            return None
        try:
            return stage(self.repo, changes, ref=self.ref, sign=self.sign)
        except StoreDamaged as err:
            self._fail(err)
            return None
        except StoreNewer:
            self.newer = True
            return None
        except SigningError:
            return None
        except (OSError, self.repo.pygit2.GitError) as err:
            self._unwritable(err)
            return None

    def _unwritable(self, err: Exception) -> None:
        """Git's object store cannot be written (a read-only repository, a full disk): said once; results are
        unaffected, and nothing more is tried this run."""
        if not self.unwritable:
            print(f"vivary: could not write to {self.ref} ({escape.text(str(err))}); this tree was not recorded; "
                  "results are unaffected", file=sys.stderr)
        self.unwritable = True

    def write(self, changes: Changes, message: str, staged: Staged | None = None) -> WriteResult | None:
        if self.damaged or self.unwritable or self.newer or changes.empty():
            return None
        try:
            result = write(self.repo, changes, message=message, ref=self.ref, sign=self.sign, staged=staged)
        except StoreDamaged as err:
            self._fail(err)
            return None
        except StoreBusy as err:
            print(f"vivary: {escape.text(str(err))}; results are unaffected", file=sys.stderr)
            return None
        except SigningError as err:
            print(f"vivary: {err}; this tree was not recorded", file=sys.stderr)
            return None
        except (OSError, self.repo.pygit2.GitError) as err:
            self._unwritable(err)
            return None
        self._loaded = self._base_loaded = False  # the next read sees our commit
        return result


def enabled(repo: Repo) -> bool:
    """`git config vivary.cache false` turns the ref cache off (reads and writes); default on."""
    return _config_bool(repo, "vivary.cache", default=True)
