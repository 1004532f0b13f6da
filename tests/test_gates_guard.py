"""The pre-commit privacy guard (gates/guard.py) and `privacy explain` give one answer: the same for a
workspace at the top or in a subfolder, from any folder, for floor files, private_paths and
sensitive names."""

from __future__ import annotations

from typing import Any

from conftest import TROPO, Repo


def _refused(out: str) -> dict[str, str]:
    """path -> code of every finding the guard printed."""
    found: dict[str, str] = {}
    for line in out.splitlines():
        if ": error P1" in line:
            path, _, rest = line.partition(":1: error ")
            found[path] = rest.split(":", 1)[0]
    return found


def test_a_subfolder_workspace_gets_its_floor_in_the_guard(repo: Repo, cli: Any) -> None:
    repo.commit("vault", {"vault/tropo.toml": TROPO, "vault/notes/a.md": "# A\n"})
    repo.write({"vault/memory/x.md": "# mine\n", "vault/heartbeat-reports/r.md": "r\n",
                "vault/.strato/private/p.md": "p\n", "vault/notes/USER.markdown": "# me\n",
                "vault/notes/b.md": "# B\n"})
    repo.git("add", "-A")
    for cwd in (repo.path, repo.path / "vault", repo.path / "vault" / "notes"):
        r = cli("hooks", "privacy-guard", cwd=cwd)
        assert r.code == 1, r.out
        assert _refused(r.out) == {
            "vault/.strato/private/p.md": "P101", "vault/heartbeat-reports/r.md": "P101",
            "vault/memory/x.md": "P101", "vault/notes/USER.markdown": "P101",
        }, r.out
    assert "vault/memory/x.md:1: error P101: private file staged (floor: memory/** (workspace vault/))" in r.out


def test_explain_gives_the_same_answer_from_any_folder(repo: Repo, cli: Any) -> None:
    repo.commit("docs", {
        "docs/tropo.toml": TROPO, "docs/.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["drafts/**"]\n',
        "docs/notes/a.md": "# A\n", "notes/top.md": "# top\n",
    })
    paths = ["docs/memory/x.md", "docs/drafts/d.md", "docs/notes/a.md", "notes/top.md", "memory/y.md"]
    want = [
        "private  docs/memory/x.md  (floor: memory/** (workspace docs/))",
        "private  docs/drafts/d.md  (config: drafts/** (in docs/.vivary/memory.toml))",
        "public   docs/notes/a.md",
        "public   notes/top.md",
        "private  memory/y.md  (floor: memory/**)",
    ]
    for cwd, extra in ((repo.path, []), (repo.path / "docs", []), (repo.path / "notes", []),
                       (repo.path, ["--rev", "HEAD"]), (repo.path / "docs" / "notes", ["--staged"])):
        r = cli("privacy", "explain", *[f":/{p}" for p in paths], *extra, cwd=cwd)
        assert r.code == 0, r.err
        assert r.out.splitlines() == want, (cwd, extra, r.out)


def test_root_keeps_the_enclosing_workspaces_private_paths(repo: Repo, cli: Any) -> None:
    repo.commit("nested", {
        "tropo.toml": TROPO, ".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["team/journal/**"]\n',
        "team/tropo.toml": TROPO, "team/journal/day.md": "# day\n", "team/notes/n.md": "# n\n",
    })
    for args in (["--root", "team"], ["--root", "team", "--rev", "HEAD"], []):
        r = cli("privacy", "explain", ":/team/journal/day.md", ":/team/notes/n.md", *args, cwd=repo.path)
        assert r.out.splitlines() == ["private  team/journal/day.md  (config: team/journal/**)",
                                      "public   team/notes/n.md"], (args, r.out)


def test_sensitive_names_are_refused_unless_allowed(repo: Repo, cli: Any) -> None:
    repo.commit("start", {"tropo.toml": TROPO, ".gitignore": ".env\n", "notes/a.md": "# A\n"})
    repo.write({".env.local": "KEY=1\n", "keys/id.pem": "-----BEGIN-----\n", ".env": "KEY=2\n",
                "notes/secrets.md": "# what the plot hides\n", "notes/passwords.md": "# x\n",
                "notes/password-audit.md": "# a plugin\n"})
    repo.git("add", ".env.local", "keys/id.pem", "notes/secrets.md", "notes/passwords.md", "notes/password-audit.md")
    repo.git("add", "-f", ".env")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert r.code == 1
    assert _refused(r.out) == {".env": "P104", ".env.local": "P104", "keys/id.pem": "P104",
                               "notes/secrets.md": "P104", "notes/passwords.md": "P104"}, r.out
    assert ("keys/id.pem:1: error P104: file with a sensitive name staged (sensitive name: *.pem); unstage it "
            "with `git restore --staged -- keys/id.pem`, or, if it holds no secret, allow this path: "
            "`git config --add vivary.guardAllow keys/id.pem`") in r.out
    # What explain calls private, the guard refuses.
    explained = cli("privacy", "explain", "--staged", ".env", ".env.local", "keys/id.pem", cwd=repo.path).out
    assert all(line.startswith("private") for line in explained.splitlines()), explained
    # A per-path allow list: the hook's --allow, or git config for every commit from this clone.
    repo.git("config", "--add", "vivary.guardAllow", "notes/secrets.md")
    r = cli("hooks", "privacy-guard", "--allow", "notes/passwords.md", cwd=repo.path)
    assert set(_refused(r.out)) == {".env", ".env.local", "keys/id.pem"}
    repo.git("rm", "-q", "--cached", ".env", ".env.local", "keys/id.pem")
    assert cli("hooks", "privacy-guard", "--allow", "notes/passwords.md", cwd=repo.path).code == 0


def test_the_allow_list_never_opens_the_floor(repo: Repo, cli: Any) -> None:
    repo.commit("start", {"tropo.toml": TROPO})
    repo.write({"memory/token-log.md": "x\n"})
    repo.git("add", "-A")
    r = cli("hooks", "privacy-guard", "--allow", "memory/token-log.md", cwd=repo.path)
    assert _refused(r.out) == {"memory/token-log.md": "P101"}


def test_a_gitlink_is_decided_by_its_name_whatever_the_submodule_settings(repo: Repo, cli: Any) -> None:
    """A submodule (a gitlink) has no bytes in this repository, but its name is committed: the guard refuses
    a gitlink the floor or a sensitive name matches, as doctor calls it a leak, even when `.gitmodules` or
    `diff.ignoreSubmodules` tells `git diff` to look away from submodules."""
    repo.commit("start", {"tropo.toml": TROPO, "notes/a.md": "# A\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    for path in ("USER.md", "notes/secrets"):
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{head},{path}")
    want = {"USER.md": "P101", "notes/secrets": "P104"}
    assert _refused(cli("hooks", "privacy-guard", cwd=repo.path).out) == want
    repo.write({".gitmodules": '[submodule "u"]\n\tpath = USER.md\n\turl = ../u\n\tignore = all\n'
                               '[submodule "s"]\n\tpath = notes/secrets\n\turl = ../s\n\tignore = all\n'})
    repo.git("add", ".gitmodules")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert r.code == 1 and _refused(r.out) == want, r.out
    repo.git("config", "diff.ignoreSubmodules", "all")
    assert _refused(cli("hooks", "privacy-guard", cwd=repo.path).out) == want
    # doctor, reading what Git tracks, calls the same two paths leaks.
    d = cli("doctor", "--json", cwd=repo.path).json()
    assert sorted(d["privacy"]["leaks"]) == sorted(want), d["problems"]


def test_the_guard_reads_a_staged_memory_toml_as_every_reader_does(repo: Repo, cli: Any) -> None:
    """The guard reads each staged `.vivary/memory.toml` by the rule every config file in a tree is read by
    (`source.config_blob_id`): a submodule there is no config file (it was `git show` failing, exit 2), and a
    `.vivary` folder that is a symbolic link (it passed, its private_paths unread) or a file over the size
    limit (it was read whole) is refused as `privacy explain --staged` refuses it: P103, the commit refused."""
    import os

    from vivary_git.source import MAX_CONFIG_BYTES

    repo.commit("start", {"tropo.toml": TROPO, "notes/a.md": "# A\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    policy = '[memory.privacy]\nprivate_paths = ["drafts/**"]\n'
    repo.write({"drafts/d.md": "# D\n"})
    repo.git("add", "drafts/d.md")
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{head},.vivary/memory.toml")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert r.code == 0 and r.out == "", (r.out, r.err)
    assert cli("privacy", "explain", "--staged", "drafts/d.md", cwd=repo.path).out == "public   drafts/d.md\n"
    repo.git("rm", "-q", "--cached", ".vivary/memory.toml")

    repo.write({"conf/memory.toml": policy})
    os.symlink("conf", repo.path / ".vivary")
    repo.git("add", "-A")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert r.code == 1 and r.out.splitlines()[0] == (
        ".vivary:1: error P103: is a symbolic link in the tree, so no config file in it can be read; commit the "
        "folder itself instead"), r.out
    explained = cli("privacy", "explain", "--staged", "drafts/d.md", cwd=repo.path)
    assert explained.code == 2 and "is a symbolic link in the tree" in explained.err
    repo.git("rm", "-q", "--cached", ".vivary")
    (repo.path / ".vivary").unlink()

    repo.write({".vivary/memory.toml": policy + "#" * MAX_CONFIG_BYTES + "\n"})
    repo.git("add", "-A")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert r.code == 1 and _refused(r.out) == {".vivary/memory.toml": "P103"}, r.out
    assert "over the 16 MiB limit for a config file; shorten it" in r.out
    assert cli("privacy", "explain", "--staged", "drafts/d.md", cwd=repo.path).code == 2


def test_the_guard_reads_each_memory_toml_once(repo: Repo, cli: Any, monkeypatch: Any) -> None:
    """The guard reads every workspace's memory.toml for its findings, and the privacy boundary needs the same
    files for the staged paths' workspaces: it read each twice (an oversized one up to the limit twice). One
    read now, the same findings (a nested one that cannot be read still refused where it was)."""
    from collections import Counter

    from vivary_git import source
    from vivary_git.source import MAX_CONFIG_BYTES

    reads: Counter[str] = Counter()
    real = source.read_config_blob

    def counting(repo_: Any, oid: str, name: str, **kw: Any) -> bytes:
        reads[name] += 1
        return real(repo_, oid, name, **kw)

    monkeypatch.setattr(source, "read_config_blob", counting)
    repo.commit("start", {"tropo.toml": TROPO, ".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["d/**"]\n',
                          "docs/tropo.toml": TROPO, "docs/.vivary/memory.toml": "",
                          "other/tropo.toml": TROPO, "other/.vivary/memory.toml": "", "notes/a.md": "# A\n"})
    repo.write({"d/x.md": "# X\n", "docs/notes/b.md": "# B\n", "docs/.vivary/memory.toml": "[memory.privacy\n"})
    repo.git("add", "-A")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert r.code == 1 and _refused(r.out) == {"d/x.md": "P101", "docs/.vivary/memory.toml": "P103"}, r.out
    assert reads == {".vivary/memory.toml": 1, "docs/.vivary/memory.toml": 1, "other/.vivary/memory.toml": 1}
    reads.clear()
    repo.write({"docs/.vivary/memory.toml": "#" * (MAX_CONFIG_BYTES + 1) + "\n"})
    repo.git("add", "-A")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert r.code == 1 and "docs/.vivary/memory.toml:1: error P103: is 16,777,218 bytes" in r.out, r.out
    assert reads == {".vivary/memory.toml": 1, "docs/.vivary/memory.toml": 1, "other/.vivary/memory.toml": 1}


def test_a_memory_toml_that_cannot_be_read_is_one_p103_at_its_own_file(repo: Repo, cli: Any) -> None:
    """A workspace's memory.toml that cannot be read (over the size limit) was refused twice: once at its file, and
    once more at the top's `.vivary/memory.toml` with its message, when the privacy boundary met it again. One P103
    now, at its file. When the top's cannot be read either, and a `.vivary` folder the listing cannot look into is
    a symbolic link, each is a P103 at its own file, and the staged files are still decided beside them (they
    were dropped: the first config the boundary met stood alone)."""
    import os

    from vivary_git.source import MAX_CONFIG_BYTES

    too_big = "#" * (MAX_CONFIG_BYTES + 1) + "\n"
    repo.commit("start", {"tropo.toml": TROPO, "docs/tropo.toml": TROPO, "docs/a.md": "# A\n",
                          "notes/tropo.toml": TROPO, "notes/a.md": "# A\n", "elsewhere/memory.toml": ""})
    repo.write({"docs/.vivary/memory.toml": too_big, "docs/b.md": "# B\n"})
    repo.git("add", "-A")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    errors = [line for line in r.out.splitlines() if ": error " in line]
    assert r.code == 1 and errors == [
        "docs/.vivary/memory.toml:1: error P103: is 16,777,218 bytes, over the 16 MiB limit for a config file; "
        "shorten it"], r.out

    repo.write({".vivary/memory.toml": too_big, ".env": "x\n", "USER.md": "# U\n", "notes/b.md": "# B\n"})
    os.symlink("../elsewhere", repo.path / "notes" / ".vivary")
    repo.git("add", "-A")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    errors = [line for line in r.out.splitlines() if ": error " in line]
    assert r.code == 1 and len(errors) == 5 and _refused(r.out) == {
        ".vivary/memory.toml": "P103", "docs/.vivary/memory.toml": "P103", "notes/.vivary": "P103",
        ".env": "P104", "USER.md": "P101"}, r.out
    assert "notes/.vivary:1: error P103: is a symbolic link in the tree, so no config file in it can be read" in r.out
