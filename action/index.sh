#!/usr/bin/env bash
# Step 3 of action.yml (opt-in): build the memory index and push refs/vivary/*.
# Each part runs only when this vivary-git has the command it needs, and says so when it does not.
set -euo pipefail

build=${VIVARY_BUILD_INDEX:-false}
push=${VIVARY_PUSH_REFS:-false}
if [ "${VIVARY_INDEX:-false}" = true ] && [ "${VIVARY_INDEX_PLANNED:-false}" != true ]; then
    echo "::notice title=vivary::index: the memory index is built only on a push to the default branch; skipped"
fi
if [ "$build" != true ] && [ "$push" != true ] && [ "${VIVARY_INDEX_PLANNED:-false}" != true ]; then
    exit 0
fi
vivary=${VIVARY_BIN:?the install step did not report where git-vivary is}
cd "${GITHUB_WORKSPACE:-.}"
# sign-cache (action/sign.sh): its Git config, for this step's Git and vivary-git only.
if [ -n "${VIVARY_CONFIG_HOME:-}" ]; then
    export XDG_CONFIG_HOME=$VIVARY_CONFIG_HOME
fi

if [ "${VIVARY_INDEX_PLANNED:-false}" = true ]; then
    # The default branch: take the cache others pushed (its vectors are used only as far as
    # vivary.cacheTrust allows), index HEAD (only notes without a vector are embedded; the new vectors
    # are recorded in refs/vivary/cache), and publish it. A failure to index is a warning: the review
    # above is the verdict of this job.
    "$vivary" sync fetch origin || echo "::warning title=vivary::index: git vivary sync fetch origin failed (see above); indexing from scratch"
    status=0
    "$vivary" index --yes --rev HEAD || status=$?
    if [ "$status" -ne 0 ]; then
        echo "::warning title=vivary::index: git vivary index --yes --rev HEAD exited $status (its message is in the log above)"
        exit 0
    fi
    if ! "$vivary" sync push origin; then
        echo "::error title=vivary::index: git vivary sync push failed; the job needs 'permissions: contents: write'"
        exit 1
    fi
    exit 0
fi

if [ "$build" = true ]; then
    # `index -h` exits 2 when the command is missing; `--yes` (write the index) came after `--dry-run`.
    if "$vivary" index -h 2>/dev/null | grep -q -e '--yes'; then
        # The index is derived data: a refusal (memory disabled, privacy undecidable) is reported, and
        # the review above stays the verdict of this job.
        status=0
        "$vivary" index --yes || status=$?
        if [ "$status" -ne 0 ]; then
            echo "::warning title=vivary::build-index: git vivary index --yes exited $status (its message is in the log above)"
        fi
    else
        echo "::notice title=vivary::build-index: this vivary-git has no 'index --yes' yet; skipped"
    fi
fi

if [ "$push" = true ]; then
    fork=false
    while IFS='=' read -r key value; do
        [ "$key" != fork ] || fork=$value
    done < <("${VIVARY_PYTHON:-python3}" "$GITHUB_ACTION_PATH/action/event.py")
    if [ "$fork" = true ]; then
        echo "::notice title=vivary::push-refs: skipped for a pull request from a fork (its token is read-only)"
        exit 0
    fi
    if "$vivary" sync push -h >/dev/null 2>&1; then
        # The sync command merges with what the remote already has and verifies what it sends.
        if ! "$vivary" sync push origin; then
            echo "::error title=vivary::push-refs: git vivary sync push failed; the job needs 'permissions: contents: write'"
            exit 1
        fi
        exit 0
    fi
    if [ -z "$(git for-each-ref --count=1 --format='%(refname)' refs/vivary/)" ]; then
        echo "::notice title=vivary::push-refs: no refs/vivary/* to push (build the index first)"
        exit 0
    fi
    if ! git push --no-verify origin '+refs/vivary/*:refs/vivary/*'; then
        echo "::error title=vivary::push-refs: could not push refs/vivary/*; the job needs 'permissions: contents: write'"
        exit 1
    fi
fi
