#!/usr/bin/env bash
# Step 2 of action.yml: review the change with `git vivary ci` and publish the result.
# Inputs arrive as environment variables, never as expressions pasted into this script (script injection).
# Needs no token: annotations are workflow commands on stdout, the summary and outputs are files.
set -euo pipefail

vivary=${VIVARY_BIN:?the install step did not report where git-vivary is}
cd "${GITHUB_WORKSPACE:-.}"
# sign-cache (action/sign.sh): its Git config, for this step's Git and vivary-git only.
if [ -n "${VIVARY_CONFIG_HOME:-}" ]; then
    export XDG_CONFIG_HOME=$VIVARY_CONFIG_HOME
fi

# GitHub's escaping for a workflow command's message: a line break would start a new command.
esc() { local s=${1//%/%25}; s=${s//$'\r'/%0D}; printf '%s' "${s//$'\n'/%0A}"; }

base=${VIVARY_BASE:-}
head=${VIVARY_HEAD:-}
fork=false
while IFS='=' read -r key value; do
    case $key in
        base) [ -n "$base" ] || base=$value ;;
        head) [ -n "$head" ] || head=$value ;;
        fork) fork=$value ;;
    esac
done < <("${VIVARY_PYTHON:-python3}" "$GITHUB_ACTION_PATH/action/event.py")
# A pull request from a fork runs with a read-only token: a workflow skips its SARIF upload on this.
echo "fork=$fork" >> "$GITHUB_OUTPUT"

# actions/checkout fetches one commit by default: bring in a missing base (or head) by id.
for rev in "$base" "$head"; do
    case $rev in
        -*) echo "::error title=vivary::revision '$(esc "$rev")' starts with '-'; name a commit, branch or tag"
            exit 2 ;;
    esac
    # Refused above, and still never where Git reads options: --end-of-options / -- before every revision.
    if [ -n "$rev" ] && ! git cat-file -e --end-of-options "$rev^{commit}" 2>/dev/null; then
        echo "vivary: $(esc "$rev") is not in this checkout; fetching it"
        if ! git fetch --no-tags --depth=1 origin -- "$rev"; then
            echo "::error title=vivary::commit $(esc "$rev") is not in this checkout and could not be fetched; set 'fetch-depth: 0' on actions/checkout"
            exit 2
        fi
    fi
done

# A base that is not an ancestor of the head is read as their merge base (docs/ci.md), which a shallow
# checkout may lack; `git vivary ci` then refuses rather than compare with the base's tip. Deepen the history
# in growing steps (10, 100, 1000 commits) until Git finds it, then fetch all of it. Nothing is fetched when
# the head records the base as a parent (the merge commit a pull_request checks out, a push of one commit).
base_id= head_id=
if [ -n "$base" ] && [ "$(git rev-parse --is-shallow-repository)" = true ]; then
    base_id=$(git rev-parse --verify --end-of-options "$base^{commit}" 2>/dev/null) || base_id=
    head_id=$(git rev-parse --verify --end-of-options "${head:-HEAD}^{commit}" 2>/dev/null) || head_id=
fi
if [ -n "$base_id" ] && [ -n "$head_id" ]; then
    related() {
        local parents
        git merge-base --end-of-options "$base_id" "$head_id" >/dev/null 2>&1 && return 0
        parents=$(git cat-file commit "$head_id" | sed -n '1,/^$/s/^parent //p')  # as recorded, not as cut
        grep -qxF -- "$base_id" <<<"$parents"
    }
    deepen() {  # the head's history too: a head the remote lacks (a local commit) leaves the base's alone
        git fetch --no-tags "$1" origin -- "$base_id" "$head_id" || git fetch --no-tags "$1" origin -- "$base_id"
    }
    for how in --deepen=10 --deepen=100 --deepen=1000 --unshallow; do
        if related || [ "$(git rev-parse --is-shallow-repository)" != true ]; then break; fi
        echo "vivary: the merge base of $(esc "$base") and $(esc "${head:-HEAD}") is not in this checkout; fetching with $how"
        # A fetch that fails leaves the clone shallow: `git vivary ci` then says what is missing and exits 2.
        deepen "$how" || break
    done
fi

args=(ci --head="$head" --format github --github-output="$GITHUB_OUTPUT" --max-annotations="${VIVARY_ANNOTATIONS:-10}"
      --fail-on="${VIVARY_FAIL_ON:-new}")
[ -z "$base" ] || args+=(--base="$base")
[ -z "${VIVARY_ROOT:-}" ] || args+=(--root="$VIVARY_ROOT")
if [ "${VIVARY_SUMMARY:-true}" = true ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    args+=(--summary="$GITHUB_STEP_SUMMARY")
fi
if [ -n "${VIVARY_SARIF:-}" ]; then
    case $VIVARY_SARIF in *$'\n'*|*$'\r'*) echo "::error title=vivary::the sarif input contains a line break"; exit 2 ;; esac
    if [ -d "$VIVARY_SARIF" ]; then
        echo "::error title=vivary::the sarif input names a folder; name a file such as vivary.sarif"
        exit 2
    fi
    # A file already there (a stale one, or one the pull request committed) must not be uploaded as ours:
    # `ci --sarif` removes it first, never through a symbolic link the pull request committed (`rm -f` here
    # would follow `reports -> ../outside`), and the output below names the file only when ci wrote it.
    args+=(--sarif="$VIVARY_SARIF")
fi

status=0
"$vivary" "${args[@]}" || status=$?
# Named only once ci wrote it (exit 0 or 1): a run that stopped early (a usage error, a refused output path)
# leaves the output empty, so no upload step (`if: steps.ID.outputs.sarif != ''`) is handed a missing file,
# a stale one, or one reached through a link.
if [ -n "${VIVARY_SARIF:-}" ] && { [ "$status" -eq 0 ] || [ "$status" -eq 1 ]; } && [ -f "$VIVARY_SARIF" ]; then
    echo "sarif=$VIVARY_SARIF" >> "$GITHUB_OUTPUT"
fi
case $status in
    0) exit 0 ;;
    1) if [ "${VIVARY_FAIL_ON_ERROR:-true}" = true ]; then exit 1; fi; exit 0 ;;
    *) exit "$status" ;;  # usage or config error: never hidden by fail-on-error
esac
