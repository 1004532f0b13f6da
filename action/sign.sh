#!/usr/bin/env bash
# Opt-in step of action.yml: sign the cache commits this run writes (`vivary.cacheSign`, docs/cache.md#trust).
# Inputs arrive as environment variables, never as expressions pasted into this script (script injection).
# Everything is set for this job only: a Git config file under $RUNNER_TEMP that the later steps read as
# their XDG config (Git and libgit2 both read `$XDG_CONFIG_HOME/git/config`); the checkout's own config
# is never written, and the key never leaves $RUNNER_TEMP (mode 600) or reaches the log.
set -euo pipefail

sign=${VIVARY_SIGN_CACHE:-false}
key=${VIVARY_SIGNING_KEY:-}
case $sign in
    true|false) ;;
    *) echo "::error title=vivary::sign-cache must be 'true' or 'false'"; exit 2 ;;
esac
if [ "$sign" != true ]; then
    if [ -n "$key" ]; then
        echo "::error title=vivary::signing-key is set but sign-cache is not 'true'; set sign-cache: true to sign, or drop the key"
        exit 2
    fi
    exit 0
fi

home=${RUNNER_TEMP:?the runner sets RUNNER_TEMP}/vivary-signing
rm -rf -- "$home"
mkdir -p -m 700 -- "$home/git"
config=$home/git/config
# The XDG config this job had, still read: only these keys are added.
previous=${XDG_CONFIG_HOME:-${HOME:-}/.config}/git/config
: > "$config"
if [ -f "$previous" ]; then
    git config --file "$config" include.path "$previous"
fi
git config --file "$config" vivary.cacheSign true
if [ -n "$key" ]; then
    command -v ssh-keygen >/dev/null || { echo "::error title=vivary::sign-cache: ssh-keygen (OpenSSH) is not on this runner"; exit 2; }
    (umask 077 && printf '%s\n' "$key" > "$home/key")
    # The public half proves the key is usable (unencrypted: no one can type a passphrase here).
    if ! ssh-keygen -y -P '' -f "$home/key" > "$home/key.pub" 2>/dev/null; then
        rm -f -- "$home/key" "$home/key.pub"
        echo "::error title=vivary::signing-key is not an unencrypted SSH private key; store one made with 'ssh-keygen -t ed25519 -N \"\"' as a secret"
        exit 2
    fi
    # Its own earlier cache commits must verify, or each run would start a new chain (docs/cache.md#trust).
    printf 'vivary-ci namespaces="git" %s\n' "$(cat "$home/key.pub")" > "$home/allowed_signers"
    git config --file "$config" gpg.format ssh
    git config --file "$config" user.signingKey "$home/key"
    git config --file "$config" gpg.ssh.allowedSignersFile "$home/allowed_signers"
    echo "vivary: cache commits are signed by $(ssh-keygen -l -f "$home/key.pub" | cut -d' ' -f2); a clone trusts them with that key in gpg.ssh.allowedSignersFile and vivary.cacheTrust signed"
fi
echo "config-home=$home" >> "$GITHUB_OUTPUT"
