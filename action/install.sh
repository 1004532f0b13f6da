#!/usr/bin/env bash
# Step 1 of action.yml: make `git-vivary` available and say where (output `bin`).
# Inputs arrive as environment variables, never as expressions pasted into this script.
set -euo pipefail

# GitHub's escaping for a workflow command's message: a line break would start a new command.
esc() { local s=${1//%/%25}; s=${s//$'\r'/%0D}; printf '%s' "${s//$'\n'/%0A}"; }

if [ -n "${VIVARY_GIT:-}" ]; then
    bin=$(command -v -- "$VIVARY_GIT" || true)
    if [ -z "$bin" ]; then
        echo "::error title=vivary::input vivary-git names '$(esc "$VIVARY_GIT")', which is not an executable; leave it empty to install vivary-git"
        exit 2
    fi
else
    py=${VIVARY_PYTHON:-python3}
    if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        echo "::error title=vivary::vivary-git needs Python 3.11 or newer and '$(esc "$py")' is not; add actions/setup-python (python-version: '3.12') before this step, or set the python input"
        exit 2
    fi
    venv="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/vivary-git-venv"
    bin="$venv/bin/git-vivary"
    key=${VIVARY_CACHE_KEY:-}
    # The cache step (actions/cache/restore) may have put back a venv: use it only when it was built
    # for this very key (see action/cache_key.py) and still runs; anything else is built afresh.
    if [ -n "$key" ] && [ -f "$venv/.vivary-cache-key" ] && [ "$(cat "$venv/.vivary-cache-key")" = "$key" ] \
            && "$bin" --version >/dev/null 2>&1; then
        echo "vivary: using the cached vivary-git install ($key)"
    else
        rm -rf -- "$venv"
        "$py" -m venv "$venv"
        # Default: this action's own source, so a pinned action version is a pinned vivary-git version.
        spec=${VIVARY_INSTALL:-$GITHUB_ACTION_PATH}
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$spec"
        [ -z "$key" ] || printf '%s\n' "$key" > "$venv/.vivary-cache-key"
    fi
fi
case $bin in *$'\n'*|*$'\r'*) echo "::error title=vivary::the git-vivary path contains a line break"; exit 2 ;; esac
"$bin" --version
echo "bin=$bin" >> "$GITHUB_OUTPUT"
