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

# Whether the clone has an object. Never fetches it: in a partial clone `git cat-file -e` would, lazily and with the
# whole history below it (its commits and folders), where the fetch below brings the one commit.
have() { git rev-list --missing=print --no-walk --end-of-options "$1" >/dev/null 2>&1; }

# actions/checkout fetches one commit by default: bring in a missing base (or head) by id.
for rev in "$base" "$head"; do
    case $rev in
        -*) echo "::error title=vivary::revision '$(esc "$rev")' starts with '-'; name a commit, branch or tag"
            exit 2 ;;
    esac
    # Refused above, and still never where Git reads options: --end-of-options / -- before every revision.
    if [ -n "$rev" ] && ! have "$rev^{commit}"; then
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

# A partial clone (actions/checkout's `filter: blob:none`) has the files of the commit it checked out; the commits
# fetched above came without theirs (a fetch inherits the clone's filter), and `git vivary ci` reads objects itself,
# never fetching (docs/sources.md#partial-clones-files-a-clone-lacks). Fetch in one batch what it will read that the
# clone lacks: the workspace folder's files (and, in a treeless clone, folders) of the head tree and of the tree it is
# compared with (the base, or their merge base when the base is not an ancestor of the head: docs/ci.md). Nothing
# outside the folder: a monorepo's other folders stay unfetched. Every Git command here runs with `--missing=print`
# or on objects the clone has, so Git starts no lazy fetch of its own (each would be one request per object).
promisor_remote() {  # as vivary_git/partial.py's promisor(): `origin` when it is one, else the first by name
    local name names=() older
    while IFS= read -r name; do
        [ "$(git config --type=bool --get "remote.$name.promisor" 2>/dev/null)" = true ] && names+=("$name")
    done < <(git remote)
    older=$(git config --get extensions.partialClone 2>/dev/null) && names+=("$older")
    [ ${#names[@]} -gt 0 ] || return 1
    printf '%s\n' "${names[@]}" | grep -qxF origin && { echo origin; return 0; }
    printf '%s\n' "${names[@]}" | LC_ALL=C sort | head -n 1
}
fetch_ids() {  # REMOTE FILTER-OPTION: the object ids on stdin, in one request, as Git's own lazy fetch asks
    git -c fetch.negotiationAlgorithm=noop fetch --no-tags --no-write-fetch-head --recurse-submodules=no "$2" \
        --stdin -- "$1"
}
workspace_folder() {  # the workspace folder from the repository's top, as Git names it (`./a/../b/` is `b`)
    local part folder='' rest
    rest="$(git rev-parse --show-prefix)${VIVARY_ROOT:-}/"
    while [ -n "$rest" ]; do
        part=${rest%%/*} rest=${rest#*/}
        case $part in
            ''|.) ;;
            ..) [ -n "$folder" ] || return 1  # above the top: ci says so itself
                case $folder in */*) folder=${folder%/*} ;; *) folder='' ;; esac ;;
            *) folder=${folder:+$folder/}$part ;;
        esac
    done
    printf '%s' "$folder"
}
subfolder() {  # TREE NAME: the id of folder NAME in TREE, which the clone has; its entry only, never its objects
    local entry
    IFS= read -r -d '' entry < <(git --literal-pathspecs ls-tree -z --full-tree --end-of-options "$1" -- "$2") ||
        [ -n "$entry" ] || return 1
    case $entry in "040000 tree "*$'\t'"$2") entry=${entry#040000 tree }; echo "${entry%%$'\t'*}" ;; *) return 1 ;; esac
}
fetch_workspace() {  # REMOTE REV...
    local remote=$1 rev id part missing list folder rest
    local trees=() next=() have_them=()
    for rev in "${@:2}"; do  # each tree as its commit records it: reading the tree itself could fetch it
        id=$(git rev-parse --verify --quiet --end-of-options "$rev^{commit}") || continue
        trees+=("$(git cat-file commit "$id" | sed -n '/^$/q;s/^tree //p')")
    done
    folder=$(workspace_folder) || return 0
    rest=${folder:+$folder/}
    while [ -n "$rest" ] && [ ${#trees[@]} -gt 0 ]; do  # down to the folder; a treeless clone lacks the trees
        part=${rest%%/*} rest=${rest#*/}                   # on the way: those alone, a level at a time
        missing=$(for id in "${trees[@]}"; do have "$id" || echo "$id"; done | LC_ALL=C sort -u)
        if [ -n "$missing" ]; then
            echo "vivary: this checkout is a partial clone that lacks $(wc -l <<<"$missing" | tr -d ' ') folder(s) on the" \
                 "way to $(esc "$folder"); fetching them alone, without what is under them"
            fetch_ids "$remote" --filter=tree:0 <<<"$missing" || return 0
        fi
        next=()
        for id in "${trees[@]}"; do
            id=$(subfolder "$id" "$part") && next+=("$id")
        done
        # A revision without the folder is left out: ci says so, or reads no such folder.
        [ ${#next[@]} -gt 0 ] || return 0
        trees=("${next[@]}")
    done
    [ ${#trees[@]} -gt 0 ] || return 0
    # A folder the clone lacks is listed itself, to come with everything under it (`--no-filter`); of one it has,
    # `--missing=print` lists each file and folder it lacks with a `?`, and fetches none.
    list=$(for id in "${trees[@]}"; do have "$id" || echo "$id"; done)
    for id in "${trees[@]}"; do have "$id" && have_them+=("$id"); done
    if [ ${#have_them[@]} -gt 0 ]; then
        list+=$'\n'$(git rev-list --objects --missing=print --end-of-options "${have_them[@]}" | sed -n 's/^?//p') ||
            return 0
    fi
    list=$(grep . <<<"$list" | LC_ALL=C sort -u) || return 0  # nothing missing
    echo "vivary: this checkout is a partial clone that lacks $(wc -l <<<"$list" | tr -d ' ') file(s) or folder(s)" \
         "the review reads${folder:+ under $(esc "$folder")}; fetching them from $(esc "$remote") in one batch"
    # A fetch that fails leaves them missing: `git vivary ci` then says which and exits 2.
    fetch_ids "$remote" --no-filter <<<"$list" || true
}
if remote=$(promisor_remote); then
    read_revs=("${head:-HEAD}")
    if [ -n "$base" ]; then
        # What `git vivary ci` compares with: the base when it is an ancestor of the head (or their histories are
        # cut), their merge base when it is not.
        point=$(git merge-base --end-of-options "$base" "${head:-HEAD}" 2>/dev/null) || point=$base
        read_revs+=("$point")
    fi
    fetch_workspace "$remote" "${read_revs[@]}" || true
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
