"""`python -m vivary_git`: the `git-vivary` command, for an environment whose scripts folder is not on PATH."""

from vivary_git.main import cli

if __name__ == "__main__":
    cli()
