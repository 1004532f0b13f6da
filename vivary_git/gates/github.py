"""GitHub Actions workflow commands and files, with GitHub's own escaping.

Messages and paths come from the notes of a pull request, which a fork controls: an unescaped line
break in a message would start a new workflow command (`::add-mask::`, `::stop-commands::`), so
every value goes through `escape_data` / `escape_property` exactly as GitHub's toolkit does
(`@actions/core`, `command.ts`), after `escape.name` so that a file name that is not UTF-8 can be
written at all. Within a line the runner reads as our command, nothing else is read as one; every
other line we print goes through `escape.text`.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from vivary_git.escape import name

if TYPE_CHECKING:
    from vivary_git.errors import ConfigError
    from vivary_git.gates.review import Annotation, Review

# GitHub shows at most this many annotations of each type (error, warning, notice) per step, and 50
# per job; anything beyond is dropped silently, so we choose which ones make it.
PER_TYPE_CAP = 10
PER_JOB_CAP = 50


# Separators some consoles and log viewers break lines at, though the runner reads only CR and LF: in a message
# written as escapes, as `escape.text` writes them, so it reads as one line wherever it is shown. Not in a
# property: `file=` must name the file as it is, or GitHub puts the annotation on no file.
_SEPARATORS = str.maketrans({"\u0085": "\\x85", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(kind: str, message: str, properties: Mapping[str, str | int | None] | None = None) -> str:
    """`::kind key=value,…::message`; properties whose value is None are left out."""
    props = ",".join(
        f"{k}={escape_property(name(str(v)))}" for k, v in (properties or {}).items() if v is not None
    )
    return f"::{kind}{' ' + props if props else ''}::{escape_data(name(message)).translate(_SEPARATORS)}"


def write_outputs(path: Path, values: Mapping[str, str | int], *, inside: Path | None = None) -> None:
    """Append step outputs to `$GITHUB_OUTPUT`. One-line values use `name=value`; anything with a line
    break uses the heredoc form with a random delimiter the value cannot contain. Opened as every output is
    (`safeio.open_output`: `inside` is the work tree read)."""
    from vivary_git.safeio import open_output

    with open_output(path, append=True, inside=inside) as out:
        for name, value in values.items():
            text = str(value)
            if "\n" in text or "\r" in text:
                delimiter = f"ghadelimiter_{secrets.token_hex(8)}"
                while delimiter in text:
                    delimiter = f"ghadelimiter_{secrets.token_hex(8)}"
                out.write(f"{name}<<{delimiter}\n{text}\n{delimiter}\n")
            else:
                out.write(f"{name}={text}\n")


def append_text(path: Path, chunks: Iterable[str], *, inside: Path | None = None) -> None:
    """Append to a file GitHub collects after the step (`$GITHUB_STEP_SUMMARY`): earlier steps may
    have written to it already. Opened as `write_outputs` opens its file."""
    from vivary_git.safeio import open_output

    with open_output(path, append=True, inside=inside) as out:
        for chunk in chunks:
            out.write(name(chunk))  # a file name that is not UTF-8 reads \xNN (docs/output.md)


EXISTING_TITLE = " (already in the base)"


def shown_as(annotations: Iterable[Annotation], fail_on: str = "new") -> list[Annotation]:
    """The annotations as GitHub shows them. A finding the base tree already had says so in its title, and
    when it cannot fail the run (`fail_on` "new") it is a notice, not an error or warning: reviewers tell old
    debt from what this change did. Within each level, those come after everything else (ranking kept)."""
    from vivary_git.gates.review import LEVEL_RANK, WHY_EXISTING

    out = [msgspec.structs.replace(a, title=a.title + EXISTING_TITLE,
                                   level="notice" if fail_on == "new" else a.level)
           if a.why == WHY_EXISTING else a for a in annotations]
    return sorted(out, key=lambda a: (LEVEL_RANK.get(a.level, 1), a.why == WHY_EXISTING))


def render_annotations(r: Review, per_type: int = PER_TYPE_CAP, fail_on: str = "new", summary: bool = False) -> str:
    """The annotation lines for one step, most important first within GitHub's caps, then one plain
    log line for those left out (plain text: it must not cost an annotation slot), naming the cap that
    left them out and the job summary only when one is written (`summary`)."""
    from vivary_git.gates.review import headline, select

    cap = min(per_type, PER_TYPE_CAP)
    chosen, left = select(shown_as(r.annotations, fail_on), cap)
    lines = [command(a.level, a.message, {"file": a.path, "line": a.line, "title": a.title}) for a in chosen]
    if left:
        why = (f"--max-annotations {per_type}" if per_type < PER_TYPE_CAP else
               f"GitHub shows {PER_TYPE_CAP} of each type per step"
               + (f", so --max-annotations {per_type} annotates {PER_TYPE_CAP}" if per_type > PER_TYPE_CAP else ""))
        lines.append(f"vivary: {left} more finding(s) and notice(s) not annotated (at most {cap} of each type: "
                     f"{why}){'; the job summary lists them all' if summary else ''}")
    lines.append(escape_data(headline(r)))
    if r.note:
        lines.append(command("warning", r.note, {"title": "vivary"}))
    return "\n".join(lines) + "\n"


def config_annotation(err: ConfigError, who: str) -> str:
    """The `::error` line for a config error that stopped the review: on its file and line (repository-relative)
    when the error names them, else on the run. `who` leads the message as on stderr (`git vivary ci`)."""
    from vivary_git.gates.review import repo_path

    where: dict[str, str | int | None] = {}
    if err.file is not None:
        where = {"file": repo_path(err.prefix or "", err.file), "line": err.line}
    return command("error", f"{who}: {err}", {**where, "title": "vivary: config error"}) + "\n"


def outputs(r: Review) -> dict[str, str | int]:
    return {
        "errors": r.check.errors,
        "warnings": r.check.warnings,
        "impacted": len(r.change.impacted) if r.change is not None else 0,
        "changed": len(r.change.changed) if r.change is not None else 0,
        "broken-edges": len(r.change.broken_edges) if r.change is not None else 0,
    }
