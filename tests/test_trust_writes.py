"""The trust boundary of memory writes: what an agent (MCP arguments, `git vivary remember`) may write into
a user's repository, and what the user's own Git config asks of every commit made for them.

- `link`/`unlink` edit link fields only: never a note's title, type, flags or keys the workspace does not
  type as links;
- no write path commits text that looks like a credential, and a refused text reaches no file name,
  commit, ref, message or output (fake tokens in today's real formats, built here from parts so this file
  holds nothing a scanner would take for a live secret);
- memory commits are signed when the user's are (`commit.gpgSign`), and refused when Git cannot sign;
  they run none of the user's hooks, and check the one note against the workspace's rules instead.
"""

from __future__ import annotations

import http.server
import random
import shutil
import string
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from conftest import Repo

from vivary_git import git as vgit
from vivary_git.errors import GitError, RefusedError
from vivary_git.git import Repo as GitRepo
from vivary_git.memory.writes import secrets
from vivary_git.memory.writes.secrets import SecretError

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from vivary_git.mcp.service import MemoryService

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"


def _fill(n: int, alphabet: str = ALNUM, seed: int | str = 0) -> str:
    rnd = random.Random(f"{n}-{alphabet}-{seed}")
    return "".join(rnd.choice(alphabet) for _ in range(n))


class Fake(NamedTuple):
    rule: str  # the built-in rule that must name it
    text: str  # the token as it would be pasted
    needle: str  # its random part: must be found nowhere


def _fake(rule: str, prefix: str, n: int, alphabet: str = ALNUM, suffix: str = "", seed: int = 0,
          around: str = "{}") -> Fake:
    body = _fill(n, alphabet, f"{prefix}{seed}")
    return Fake(rule, around.format(prefix + body + suffix), body[:16])


def _pem(kind: str, seed: int, field: str | None = None) -> Fake:
    body = _fill(64, ALNUM + "+/", seed)
    more = _fill(64, ALNUM + "+/", seed + 1)
    block = f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n{more}\n-----END {kind}PRIVATE KEY-----"
    if field is not None:  # one YAML line, as a frontmatter field holds it: its line breaks written `\n`
        return Fake("Private Key", f'{field}: "' + block.replace("\n", "\\n") + '"', body[:16])
    return Fake("Private Key", block, body[:16])


# Each a token in the format its issuer uses today; ≥ 30, every family the built-in patterns cover.
FAKES: list[Fake] = [
    _fake("GitHub Token", "ghp_", 36),
    _fake("GitHub Token", "gho_", 36),
    _fake("GitHub Token", "ghu_", 36),
    _fake("GitHub Token", "ghs_", 36),
    _fake("GitHub Token", "ghr_", 36),
    _fake("GitHub Token", "github_pat_11", 20, suffix="_" + _fill(59, seed=1)),
    _fake("GitLab Token", "glpat-", 20, ALNUM + "-_"),
    _fake("GitLab Token", "gldt-", 24),
    _fake("Anthropic API Key", "sk-ant-api03-", 93, ALNUM + "-_", suffix="AA"),
    _fake("Anthropic API Key", "sk-ant-admin01-", 93, ALNUM + "-_", suffix="AA"),
    _fake("OpenAI API Key", "sk-proj-", 156, ALNUM + "-_"),  # no T3BlbkFJ marker
    _fake("OpenAI API Key", "sk-svcacct-", 74, ALNUM + "-_"),
    _fake("OpenAI API Key", "sk-", 20, suffix="T3BlbkFJ" + _fill(20, seed=2)),
    _fake("OpenAI API Key", "sk-", 48),
    _fake("Google API Key", "AIza", 35, ALNUM + "-_"),
    _fake("Google API Key", "GOCSPX-", 28, ALNUM + "-_"),
    _fake("Google API Key", "ya29.", 120, ALNUM + "-_"),
    _fake("Hugging Face Token", "hf_", 34, string.ascii_letters),
    _fake("npm Token", "npm_", 36),
    _fake("Slack Token", "xoxb-", 12, string.digits, suffix="-" + _fill(12, string.digits, 3) + "-" + _fill(24)),
    _fake("Slack Token", "xoxp-", 12, string.digits, suffix="-" + _fill(13, string.digits, 4) + "-" + _fill(32, HEX)),
    _fake("Slack Token", "xapp-1-A", 10, UPPER, suffix="-" + _fill(13, string.digits) + "-" + _fill(64, HEX)),
    _fake("Slack Token", "https://hooks.slack.com/services/T", 8, UPPER, suffix="/B" + _fill(8, UPPER, 5) + "/"
          + _fill(24, seed=5)),
    _fake("Stripe Access Key", "sk_live_", 24),
    _fake("Stripe Access Key", "rk_live_", 24, seed=1),
    _fake("AWS Access Key", "AKIA", 16, UPPER),
    _fake("AWS Access Key", "ASIA", 16, UPPER, seed=1),
    _fake("JSON Web Token", "eyJhbGciOiJIUzI1NiJ9.eyJ", 40, ALNUM + "-_", suffix="." + _fill(43, ALNUM + "-_")),
    _pem("RSA ", 10),
    _pem("OPENSSH ", 11),
    _pem("EC ", 12),
    _pem("ENCRYPTED ", 13),
    _pem("", 14),
    _pem("OPENSSH ", 15, field="deploy_key"),  # inside a frontmatter field
    _fake("Bearer Token", "Authorization: Bearer ", 40, ALNUM + "._-"),
    _fake("Bearer Token", "curl -H 'Authorization: Bearer ", 64, ALNUM, suffix="' https://api.example.org/v1"),
    _fake("Bearer Token", "Authorization: Basic ", 24, ALNUM, suffix="=="),
    _fake("Secret Keyword", "password=", 16),
]

_PNG = ("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5"
        "ErkJggg==")
# Each looks a little like a token and is not one; ≥ 30. All of them must pass both scanners.
HARMLESS = [
    "We use sk-learn for the baseline model.",
    "sk-learn-contrib has the imbalanced-learn samplers.",
    "The sk-SK locale formats dates as d. M. yyyy.",
    "The empty blob is e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 (a SHA-1).",
    "Released from commit da39a3ee5e6b4b0d3255bfef95601890afd80709 on main.",
    "The empty tree is 4b825dc642cb6eb9a060e54bf8d69288fbee4904.",
    "Run id 550e8400-e29b-41d4-a716-446655440000 failed its smoke test.",
    "Tenant f47ac10b-58cc-4372-a567-0e02b2c3d479 moved to the EU region.",
    f"The favicon is inlined as {_PNG}",
    "requests==2.32.3 --hash=sha256:" + _fill(64, HEX),
    "numpy==2.1.0 \\ --hash=sha256:" + _fill(64, HEX, 1),
    "The image digest is sha256:" + _fill(64, HEX, 2) + ".",
    "sha512-" + _fill(86, ALNUM + "+/", 3) + "== is the lockfile's integrity field.",
    "The deploy key is in the team vault.",
    "Use the header Authorization: Bearer <token> with the token from 1Password.",
    "Set Authorization: Bearer $API_TOKEN in the CI job.",
    "Bearer tokens expire after one hour.",
    "The bearer of this letter is trusted by the release captain.",
    "ghp_ tokens are GitHub personal access tokens; rotate them yearly.",
    "GitLab tokens start with glpat-; keep them in CI variables.",
    "hf_hub_download caches models under ~/.cache/huggingface.",
    "npm_config_registry points at the internal mirror.",
    "xox tokens belong in Slack's app settings, not in notes.",
    "sk_test_ keys are Stripe's sandbox keys.",
    "An AIza prefix means a Google API key: never paste one here.",
    "Rotate the AKIA keys every 90 days.",
    "-----BEGIN PUBLIC KEY----- blocks are fine to share.",
    "-----BEGIN CERTIFICATE----- starts the CA bundle.",
    "ssh-keygen -t ed25519 makes a key; the .pub file goes in authorized_keys.",
    "git log --format=%G? prints G for a good signature.",
    "The API rate limit is 5000 requests per hour.",
    "Search answers stay under a token budget of 2000.",
    "Version v1.2.3-rc.1+build.5 shipped on Tuesday.",
    "feature-flag-rollout-for-the-billing-service-2024 is on for 10% of users.",
    "The build runs at https://ci.example.org/job/1234/console.",
    "npm install --save-dev @types/node",
    "password=${DB_PASSWORD} comes from the CI secret store.",
    "api_key: <your key here>",
    "secret = %(SECRET)s in the settings template",
]


def test_the_fake_tokens_and_harmless_strings_are_enough() -> None:
    assert len(FAKES) >= 30 and len(HARMLESS) >= 30
    assert len({f.needle for f in FAKES}) == len(FAKES)


@pytest.mark.parametrize("with_detect_secrets", [True, False], ids=["detect-secrets", "built-in only"])
def test_every_fake_token_is_refused_and_every_harmless_string_passes(
        monkeypatch: pytest.MonkeyPatch, with_detect_secrets: bool) -> None:
    """Both detectors run: installing detect-secrets (the `mcp` extra) once skipped the built-in patterns,
    and `github_pat_`, `sk-ant-`, `sk-proj-`, `AIza`, `hf_`, `npm_` and bearer headers were committed.
    Without it (the package missing: simulated by hiding its plugins) the built-in patterns alone name
    every one by its rule."""
    if not with_detect_secrets:
        monkeypatch.setattr(secrets, "_plugins", lambda: None)
    else:
        assert secrets._plugins() is not None
    missed = [f.text[:12] for f in FAKES if secrets.find_secret([("text", f"note: {f.text} (old)")]) is None]
    assert not missed, missed
    if not with_detect_secrets:
        named = {f.text[:12]: secrets.find_secret([("text", f.text)]) for f in FAKES}
        assert {k: v[2] for k, v in named.items() if v is not None} == {f.text[:12]: f.rule for f in FAKES}
    flagged = {h: secrets.find_secret([("text", h)]) for h in HARMLESS}
    assert {h: v for h, v in flagged.items() if v is not None} == {}


@pytest.mark.parametrize("with_detect_secrets", [True, False], ids=["detect-secrets", "built-in only"])
def test_a_refusal_names_the_field_line_rule_detector_and_fix_never_the_value(
        monkeypatch: pytest.MonkeyPatch, with_detect_secrets: bool) -> None:
    """The refusal, word for word: the field's label, the line within it (blank lines counted), the rule and
    the detector that found it, and what to write instead; never the token. A field with no text (None, "",
    a value that is not a string, as a JSON argument may be) is skipped, not an error. `scanner_name`
    (what `onboard` says found a secret) names detect-secrets only when its plugins are there."""
    if not with_detect_secrets:
        monkeypatch.setattr(secrets, "_plugins", lambda: None)
    found_by = "detect-secrets" if with_detect_secrets else "vivary-git's own patterns"
    assert secrets.scanner_name() == ("detect-secrets and vivary-git's own patterns" if with_detect_secrets
                                      else "vivary-git's own patterns")
    fields: list[tuple[str, Any]] = [("title", None), ("tag", ""), ("tag", 42), ("link", "related:deploy"),
                                     ("text", f"Deploy notes\n\n  \nkey {AWS.text} (old)\n{PAT.text}")]
    with pytest.raises(SecretError) as err:
        secrets.refuse_secrets(fields)
    assert str(err.value) == (
        f"refusing to remember this: text line 4 looks like a credential (AWS Access Key, found by {found_by}); "
        "memories are committed to Git and shown to agents, so they must never hold a secret: remove it (say "
        "where the secret lives instead, e.g. \"the deploy key is in the team vault\")")
    assert AWS.needle not in str(err.value)
    assert secrets.scan(fields[:4]) is None
    assert secrets.find_secret([("tag", "fine"), ("text", f"one\n{PAT.text}")]) == ("text", 2, "GitHub Token")


def _seed(repo: Repo) -> None:
    repo.commit("init", {"notes/deploy.md": "---\ntags: [ops]\n---\n# Deploy runbook\n\nHow we deploy.\n",
                         "README.md": "# Home\n"})


def _git_bytes(repo: Repo, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=repo.path, capture_output=True, check=True).stdout


def _assert_nowhere(repo: Repo, needles: list[str], outputs: str) -> None:
    """None of `needles` in `outputs`, in any object of the store (reachable or not), in any commit message,
    diff, ref or reflog entry, in any file name, or in any file of the work tree and `.git` but the objects."""
    places = {
        "outputs": outputs.encode(),
        "objects": _git_bytes(repo, "cat-file", "--batch-all-objects", "--batch"),
        "log": _git_bytes(repo, "log", "--all", "-p", "--format=%H %s%n%b"),
        "refs": _git_bytes(repo, "for-each-ref", "--format=%(refname) %(subject)"),
        "reflog": _git_bytes(repo, "reflog", "--all", "--format=%gs"),
        "names": "\n".join(str(p) for p in repo.path.rglob("*")).encode(),
    }
    for path in repo.path.rglob("*"):  # the index, logs, the access log and state under .git/vivary, the notes
        if path.is_file() and path.relative_to(repo.path).parts[:2] != (".git", "objects"):
            places[str(path)] = path.read_bytes()
    found = [(needle, where) for needle in needles for where, data in places.items() if needle.encode() in data]
    assert not found, found


def test_no_fake_token_reaches_a_file_name_commit_ref_or_output(repo: Repo, cli: Any) -> None:
    """Each fake token as the text (which names the file and the commit subject), as the title and as a
    tag of `git vivary remember`: refused (exit 3), the message naming the rule and where it matched, and
    the token nowhere: no file (or file name), object, commit, ref, reflog, stdout or stderr holds it."""
    _seed(repo)
    head = repo.git("rev-parse", "HEAD")
    status = repo.git("status", "--porcelain")
    said = ""
    for fake in FAKES:
        ways = [([fake.text], "text"), (["Fine words", "--title", fake.text], "title")]
        if len(fake.text.split()) == 1:
            ways.append((["Fine words", "--tag", fake.text], "tag"))
        for args, where in ways:
            r = cli("remember", *args, cwd=repo.path)
            assert r.code == 3, (fake.rule, where, r.out + r.err)
            assert f"refusing to remember this: {where} line 1 looks like a credential (" in r.err, r.err
            said += r.out + r.err
    assert repo.git("rev-parse", "HEAD") == head and repo.git("status", "--porcelain") == status
    assert not (repo.path / "memories").exists()
    _assert_nowhere(repo, [f.needle for f in FAKES], said)


def test_harmless_lookalikes_are_remembered(repo: Repo, cli: Any) -> None:
    _seed(repo)
    r = cli("remember", "\n".join(HARMLESS), "--title", "Lookalikes: sk-learn, a SHA-1 and a UUID", "--tag",
            "sk-learn", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    text = repo.git("show", f"HEAD:{r.json()['path']}")
    assert all(h in text for h in HARMLESS)


# --- every write path an agent reaches ---------------------------------------------------------------------

AWS = _fake("AWS Access Key", "AKIA", 16, UPPER, seed=7)
PAT = _fake("GitHub Token", "github_pat_11", 20, suffix="_" + _fill(59, seed=8), seed=8)
ANT = _fake("Anthropic API Key", "sk-ant-api03-", 93, ALNUM + "-_", suffix="AA", seed=9)


class Site:
    """A loopback web server (in a thread) whose pages hold fake tokens: `remember --url` page text."""

    def __init__(self) -> None:
        pages = {"/runbook.md": f"# Runbook\n\nThe deploy uses {ANT.text} for the model.\n".encode(),
                 "/plain.md": b"# Plain\n\nNothing secret here, just the deploy steps.\n"}

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = pages.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "text/markdown; charset=utf-8")
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)


@pytest.fixture
def site() -> Iterator[Site]:
    s = Site()
    try:
        yield s
    finally:
        s.close()


def test_every_agent_write_path_refuses_secret_text(repo: Repo, site: Site) -> None:
    """add (text, title, tags, link specs, type, durability), update (text, tags, durability, id), link and
    unlink (source, field, target), edit (id, appended text, heading, passage and its replacement, expires,
    durability, tags), retire and forget (id, reason), move (id, destination), dream resolution (task id,
    title, content), and source anchors (a
    file's text, a PEM key in its frontmatter, title, description, tags, the URL and a page's text): each
    refused as a secret, its token in no message, nothing committed. `update` was scanned for its tags only
    in a planted mutant, and committed an AWS key: no test then wrote a secret through `update`."""
    repo.commit("init", {
        "notes/deploy.md": "# Deploy runbook\n\nHow we deploy.\n",
        "docs/leaky.md": f"# Leaky\n\nexport AWS_ACCESS_KEY_ID={AWS.text}\n",
        "docs/leaky-frontmatter.md": "---\ndeploy_key: \"-----BEGIN OPENSSH PRIVATE KEY-----\\n"
                                     f"{_fill(64, seed=20)}\\n-----END OPENSSH PRIVATE KEY-----\"\n---\n# Keys\n",
        "docs/plain.md": "# Plain\n\nThe deploy steps, nothing secret.\n",
        ".vivary/memory.toml": "[memory.sources]\nallow_network = true\nallow_private_addresses = true\n",
    })
    service = MemoryService(repo.path)
    mid = service.add("Deploys happen on Tuesdays.").id
    assert mid is not None
    head = repo.git("rev-parse", "HEAD")
    status = repo.git("status", "--porcelain")
    calls: list[tuple[str, Callable[[], Any], str]] = [
        ("add text", lambda: service.add(f"The key is {AWS.text}"), AWS.needle),
        ("add title", lambda: service.add("Fine words", title=PAT.text), PAT.needle),
        ("add tag", lambda: service.add("Fine words", tags=[PAT.text]), PAT.needle),
        ("add link target", lambda: service.add("Fine words", links=[f"related:{PAT.text}"]), PAT.needle),
        ("add link field", lambda: service.add("Fine words", links=[f"{PAT.text}:notes/deploy"]), PAT.needle),
        ("add durability", lambda: service.add("Fine words", durability=PAT.text), PAT.needle),
        ("update text", lambda: service.update(mid, text=f"Rotated: {AWS.text}"), AWS.needle),
        ("update text, 2nd line", lambda: service.update(mid, text=f"Rotated.\n\n{ANT.text}"), ANT.needle),
        ("update tags", lambda: service.update(mid, tags=["ops", PAT.text]), PAT.needle),
        ("update durability", lambda: service.update(mid, durability=PAT.text), PAT.needle),
        ("update id", lambda: service.update(PAT.text, text="Fine words"), PAT.needle),
        ("link source", lambda: service.link(PAT.text, "related", "notes/deploy"), PAT.needle),
        ("link field", lambda: service.link(mid, PAT.text, "notes/deploy"), PAT.needle),
        ("link target", lambda: service.link(mid, "related", PAT.text), PAT.needle),
        ("unlink source", lambda: service.unlink(PAT.text, "related", "notes/deploy"), PAT.needle),
        ("unlink field", lambda: service.unlink(mid, PAT.text, "notes/deploy"), PAT.needle),
        ("unlink target", lambda: service.unlink(mid, "related", PAT.text), PAT.needle),
        ("edit append", lambda: service.edit(mid, append=f"Rotated.\n\n{AWS.text}"), AWS.needle),
        ("edit heading", lambda: service.edit(mid, append="Fine words", heading=PAT.text), PAT.needle),
        ("edit replace", lambda: service.edit(mid, replace=PAT.text, with_text="Fine"), PAT.needle),
        ("edit with", lambda: service.edit(mid, replace="Tuesdays", with_text=ANT.text), ANT.needle),
        ("edit expires", lambda: service.edit(mid, expires=PAT.text), PAT.needle),
        ("edit durability", lambda: service.edit(mid, durability=PAT.text), PAT.needle),
        ("edit tags", lambda: service.edit(mid, tags=["ops", PAT.text]), PAT.needle),
        ("edit id", lambda: service.edit(PAT.text, append="Fine words"), PAT.needle),
        ("retire reason", lambda: service.retire(mid, reason=f"leaked {AWS.text}"), AWS.needle),
        ("retire id", lambda: service.retire(PAT.text, reason="fine"), PAT.needle),
        ("forget reason", lambda: service.forget(mid, reason=PAT.text), PAT.needle),
        ("forget id", lambda: service.forget(PAT.text, reason="fine"), PAT.needle),
        ("move to", lambda: service.move(mid, f"ops/{PAT.text}"), PAT.needle),
        ("move id", lambda: service.move(PAT.text, "fine"), PAT.needle),
        ("dream task id", lambda: service.dream(task_id=PAT.text, title="T", content="C"), PAT.needle),
        ("dream title", lambda: service.dream(task_id="t-000000000000", title=PAT.text, content="C"), PAT.needle),
        ("dream content", lambda: service.dream(task_id="t-000000000000", title="T", content=f"x\n{AWS.text}"),
         AWS.needle),
        ("file text", lambda: service.anchor(file="docs/leaky.md"), AWS.needle),
        ("file frontmatter PEM", lambda: service.anchor(file="docs/leaky-frontmatter.md"), "BEGIN OPENSSH"),
        ("file path", lambda: service.anchor(file=f"docs/{PAT.text}.md"), PAT.needle),
        ("anchor title", lambda: service.anchor(file="docs/plain.md", title=PAT.text), PAT.needle),
        ("anchor description", lambda: service.anchor(file="docs/plain.md", description=PAT.text), PAT.needle),
        ("anchor tag", lambda: service.anchor(file="docs/plain.md", tags=[PAT.text]), PAT.needle),
        ("url", lambda: service.anchor(url=f"{site.base}/plain.md?key={PAT.text}", allow_network=True),
         PAT.needle),
        ("url page text", lambda: service.anchor(url=f"{site.base}/runbook.md", allow_network=True), ANT.needle),
        ("url title", lambda: service.anchor(url=f"{site.base}/plain.md", title=PAT.text, allow_network=True),
         PAT.needle),
        ("url tag", lambda: service.anchor(url=f"{site.base}/plain.md", tags=[PAT.text], allow_network=True),
         PAT.needle),
    ]
    for name, call, needle in calls:
        with pytest.raises(SecretError) as got:
            call()
        message = str(got.value)
        assert "looks like a credential" in message, (name, message)
        assert needle not in message and "-----BEGIN" not in message, (name, message)
        assert repo.git("rev-parse", "HEAD") == head, name
    assert repo.git("status", "--porcelain") == status
    # the harmless versions of the same calls go through: the refusals were the secrets, not the paths
    assert service.update(mid, text="Rotated quarterly.").changed
    assert service.edit(mid, append="Fine words.").changed and service.retire(mid, reason="fine").changed
    assert service.anchor(url=f"{site.base}/plain.md", allow_network=True).changed
    service.close()
    for needle in (AWS.needle, PAT.needle, ANT.needle):
        for path in repo.path.rglob("*"):
            assert needle not in path.name
        assert needle not in repo.git("log", "--all", "--format=%B")


# --- link and unlink touch link fields only ---------------------------------------------------------------

IDEAS = ("---\ntitle: Ideas\ntype: idea\nstatus: draft\ntags: [later]\naliases: [Thoughts]\npriority: 2\n---\n"
         "# Ideas\n\nSome ideas.\n")


@pytest.mark.parametrize("field", ["title", "type", "archived", "expires", "vivary-ignore", "id", "status", "tags",
                                   "aliases", "priority", "source", "kind"])
def test_link_never_rewrites_a_users_own_property(repo: Repo, field: str) -> None:
    """`link` rewrote `title: Ideas` as `title: [Ideas, "[[notes/deploy]]"]`, and set `type`, `archived` and
    `vivary-ignore`: in a vault it wrote any key. Now only the fields the workspace types as ref/ref-list
    and the link properties of its dialect (`related`, `about`, ...) are written; `unlink` likewise."""
    repo.commit("init", {"notes/ideas.md": IDEAS, "notes/deploy.md": "# Deploy\n"})
    head = repo.git("rev-parse", "HEAD")
    service = MemoryService(repo.path)
    for op in (service.link, service.unlink):
        with pytest.raises(RefusedError, match=f"'{field}' is not a link field of an untyped note") as got:
            op("notes/ideas", field, "notes/deploy")
        assert "link fields of untyped notes here: about, compacts, contradicts, derived_from, related, " \
               "supersedes" in str(got.value)
    assert (repo.path / "notes/ideas.md").read_text() == IDEAS
    assert repo.git("rev-parse", "HEAD") == head
    # a link property is still written, and nothing else in the note changes
    got = service.link("notes/ideas", "related", "notes/deploy")
    assert got.changed
    assert (repo.path / "notes/ideas.md").read_text() == IDEAS.replace("priority: 2\n",
                                                                        'priority: 2\nrelated: ["[[notes/deploy]]"]\n')
    assert service.unlink("notes/ideas", "related", "notes/deploy").changed
    assert (repo.path / "notes/ideas.md").read_text() == IDEAS
    service.close()


def test_link_never_writes_a_memorys_flags_nor_a_title_typed_as_a_ref(repo: Repo, cli: Any) -> None:
    """Not even a memory's `archived`/`expires`, nor a `title` a tropo.toml types as `ref`: the keys that say
    what a note is and whether it is read are never link fields."""
    repo.commit("init", {"tropo.toml": 'version = 1\n[types.decision]\nfolder = "decisions"\n'
                                       '[types.decision.optional]\ntitle = "ref"\nrelated = "ref-list"\n',
                         "decisions/use-git.md": "# Use Git\n", "decisions/keys.md": "# Keys\n"})
    service = MemoryService(repo.path)
    mid = service.add("Keys rotate quarterly.").id
    assert mid is not None
    head = repo.git("rev-parse", "HEAD")
    for source, field in ((mid, "archived"), (mid, "expires"), (mid, "title"), ("use-git", "title"),
                          ("use-git", "type")):
        with pytest.raises(RefusedError, match="is not a link field"):
            service.link(source, field, "keys")
    assert repo.git("rev-parse", "HEAD") == head
    assert service.link("use-git", "related", "keys").changed  # a ref-list field of its type
    assert service.link(mid, "related", "keys").changed  # a memory edge field
    service.close()
    r = cli("remember", "Linked at birth", "--link", "archived:keys", cwd=repo.path)
    assert r.code == 3 and "'archived' is not a link field of memory" in r.err


# --- commits: signed as the user's are, no hooks, the one note checked ----------------------------------


def _signing(repo: Repo, tmp_path: Path) -> Path:
    key = tmp_path / "signing-key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "test", "-f", str(key)], check=True)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f"test@example.invalid {(tmp_path / 'signing-key.pub').read_text().strip()}\n")
    for k, v in (("gpg.format", "ssh"), ("user.signingKey", f"{key}.pub"), ("gpg.ssh.allowedSignersFile", str(allowed)),
                 ("commit.gpgSign", "true")):
        repo.git("config", k, v)
    return key


def _signature(repo: Repo, rev: str = "HEAD") -> str:
    return repo.git("log", "-1", "--format=%G?", rev).strip()


EXPIRED = {"memories/old-standup.md": "---\ntype: memory\ndurability: ephemeral\nexpires: \"2020-01-01\"\n---\n"
                                      "# The standup moved to the blue room today\n"}


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (OpenSSH)")
def test_memory_commits_are_signed_when_the_users_commits_are(repo: Repo, cli: Any, tmp_path: Path) -> None:
    """With `commit.gpgSign = true` a memory commit was unsigned (`%G?` = N): `commit-tree` ignores the
    setting. Now every kind (add, update, link, a dream's several-note commit) is signed by Git with the
    user's `gpg.format` and key, and verifies against their allowed signers (`G`)."""
    _seed(repo)
    repo.commit("expired", EXPIRED)
    _signing(repo, tmp_path)
    r = cli("remember", "Signed like the user's own commits", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert _signature(repo) == "G"
    service = MemoryService(repo.path)
    assert service.update(r.json()["id"], durability="durable").changed and _signature(repo) == "G"
    assert service.link(r.json()["id"], "related", "notes/deploy").changed and _signature(repo) == "G"
    service.close()
    dreamt = cli("dream", "--force", "--json", cwd=repo.path)
    assert dreamt.code == 0 and dreamt.json()["run"]["expire_commit"], dreamt.err
    assert _signature(repo) == "G"
    repo.git("verify-commit", "HEAD")
    # not signing when the user does not: unchanged
    repo.git("config", "commit.gpgSign", "false")
    assert cli("remember", "Plain commits when the user's are plain", cwd=repo.path).code == 0
    assert _signature(repo) == "N"


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (OpenSSH)")
@pytest.mark.parametrize("broken", ["missing key", "signing program fails", "signing program says why",
                                    "gpg program fails"])
def test_a_commit_git_cannot_sign_is_refused_never_made_unsigned(repo: Repo, cli: Any, tmp_path: Path,
                                                                  broken: str) -> None:
    """Refused with Git's own reason: its last line that says something (a signing program that fails
    without a word leaves Git a bare `error:`, and then the exit code is the reason; bytes of the program's
    that are not UTF-8 are shown as U+FFFD)."""
    _seed(repo)
    repo.commit("expired", EXPIRED)
    key = _signing(repo, tmp_path)
    if broken == "missing key":
        repo.git("config", "user.signingKey", f"{key}.gone.pub")
        why = f"error: Couldn't load public key {key}.gone.pub: "
    elif broken == "signing program fails":
        repo.git("config", "gpg.ssh.program", "/bin/false")
        why = "`git commit-tree` exit code "
    elif broken == "signing program says why":
        program = tmp_path / "failing-ssh-keygen"
        program.write_bytes(b"#!/bin/sh\nprintf 'signing failed: card \\377 removed\\n\\n' >&2\nexit 1\n")
        program.chmod(0o755)
        repo.git("config", "gpg.ssh.program", str(program))
        why = "error: signing failed: card \ufffd removed; nothing was committed"
    else:
        repo.git("config", "gpg.format", "openpgp")
        repo.git("config", "gpg.program", "/bin/false")
        why = "error: gpg failed to sign the data; nothing was committed"
    head = repo.git("rev-parse", "HEAD")
    status = repo.git("status", "--porcelain")
    r = cli("remember", "Never unsigned", cwd=repo.path)
    assert r.code == 3, r.out + r.err
    assert "commit.gpgSign is true in your Git config" in r.err and "user.signingKey" in r.err, r.err
    assert f"Git could not sign this one: {why}" in r.err, r.err
    assert "nothing was committed" in r.err and "Traceback" not in r.err
    dreamt = cli("dream", "--force", cwd=repo.path)  # a several-note commit (the expired memory removed)
    assert dreamt.code == 3 and "commit.gpgSign" in dreamt.err, dreamt.out + dreamt.err
    assert repo.git("rev-parse", "HEAD") == head
    assert repo.git("status", "--porcelain") == status
    assert not (repo.path / "memories/never-unsigned.md").exists()
    assert (repo.path / "memories/old-standup.md").exists()



@pytest.mark.parametrize("value", ["maybe", "ma\udcffybe"], ids=["not a boolean", "not UTF-8"])
def test_a_gpgsign_git_cannot_read_refuses_every_memory_commit(repo: Repo, cli: Any, value: str) -> None:
    """`commit.gpgSign` that Git cannot read as a boolean is an error to `git commit`, so to a memory write
    too (never a guess that it is off): one line naming the setting, Git's words (bytes that are not UTF-8
    as U+FFFD) and the fix."""
    _seed(repo)
    repo.git("config", "commit.gpgSign", value)
    head = repo.git("rev-parse", "HEAD")
    r = cli("remember", "Never a guess", cwd=repo.path)
    shown = value.replace("\udcff", "\ufffd")
    assert r.code == 2 and r.out == "", r.out + r.err
    assert r.err == (f"git vivary remember: commit.gpgSign cannot be read: fatal: bad boolean config value '{shown}' "
                     "for 'commit.gpgsign'; fix it with `git config commit.gpgSign true|false`\n"), r.err
    assert repo.git("rev-parse", "HEAD") == head


def test_a_commit_git_cannot_make_is_an_error_in_gits_words(repo: Repo) -> None:
    _seed(repo)
    missing = "1234567890" * 4
    with pytest.raises(GitError) as err:
        vgit.commit_tree(GitRepo(repo.path), missing, [], "vivary: test", sign=False)
    assert str(err.value) == f"`git commit-tree` failed: fatal: {missing} is not a valid object"

def test_memory_commits_run_no_hooks_and_check_the_one_note_instead(repo: Repo, cli: Any) -> None:
    """A memory commit is made with `git commit-tree`, which runs none of the user's hooks (docs/remember.md
    says so): a pre-commit hook that exits 1 does not stop it. What it checks instead includes the
    workspace's rules on the note it writes: a note the write would give an error is refused (here a
    decision without its required `status`), while an error the note already had does not block an edit."""
    repo.commit("init", {"tropo.toml": 'version = 1\n[types.decision]\nfolder = "decisions"\n'
                                       'required = { status = "string" }\n',
                         "decisions/use-git.md": "---\nstatus: accepted\n---\n# Use Git\n",
                         "memories/old.md": "---\ntype: memory\ndurability: forever\n---\n# Old memory\n\nOld.\n"})
    hook = repo.path / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho refused by the user's hook >&2\nexit 1\n")
    hook.chmod(0o755)
    head = repo.git("rev-parse", "HEAD")
    repo.git("commit", "--allow-empty", "-qm", "blocked", check=False)
    assert repo.git("rev-parse", "HEAD") == head  # the hook does stop `git commit`
    assert cli("remember", "Hooks do not run for memories", cwd=repo.path).code == 0
    assert repo.git("rev-parse", "HEAD~1") == head

    head = repo.git("rev-parse", "HEAD")
    r = cli("remember", "Adopt trunk based development", "--type", "decision", cwd=repo.path)
    assert r.code == 3, r.out + r.err
    assert "E101 missing required field 'status' for type 'decision'" in r.err, r.err
    assert repo.git("rev-parse", "HEAD") == head
    assert not (repo.path / "decisions/adopt-trunk-based-development.md").exists()
    # `durability: forever` is an error old.md already has: an update of its text is not blocked by it
    service = MemoryService(repo.path)
    assert service.update("old", text="Old, and now edited.").changed
    service.close()



def test_the_one_note_check_names_the_note_by_its_workspace_path_and_counts_the_rest(repo: Repo, cli: Any) -> None:
    """The check of the note a memory write commits names it by its path in the workspace (here a subfolder of
    the repository, with a nested tropo.toml in another folder) and counts what else it found: one error, two,
    three, each refusal word for word, nothing committed."""
    repo.commit("init", {
        "kb/tropo.toml": 'version = 1\n[types.memo]\nfolder = "memos"\nrequired = { status = "string" }\n'
                         '[types.idea]\nfolder = "ideas"\nrequired = { status = "string", owner = "string" }\n'
                         '[types.decision]\nfolder = "decisions"\n'
                         'required = { status = "string", owner = "string", reviewer = "string" }\n',
        "kb/memos/m.md": "---\nstatus: open\n---\n# M\n",
        "kb/team/tropo.toml": "[base]\nallow_untyped = false\n",  # a nested tropo.toml elsewhere: not in force here
        "README.md": "# Outside the workspace\n",
    })
    head = repo.git("rev-parse", "HEAD")
    tail = (": this write would break the workspace's rules for the note, so nothing was committed; "
            "`git vivary check` lists the rules\n")
    cases = [("memo", "memos", ""), ("idea", "ideas", " (and 1 more)"), ("decision", "decisions", " (and 2 more)")]
    for kind, folder, more in cases:
        r = cli("remember", "Plan the offsite", "--type", kind, cwd=repo.path / "kb")
        assert r.code == 3, r.out + r.err
        first = f"E101 missing required field 'status' for type '{kind}'"
        assert r.err == f"git vivary remember: {folder}/plan-the-offsite.md:1: {first}{more}{tail}", r.err
        assert not (repo.path / "kb" / folder / "plan-the-offsite.md").exists()
    assert repo.git("rev-parse", "HEAD") == head
