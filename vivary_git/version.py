"""The package version, in a module of its own: every module that names it imports it from here, so
none imports the package (whose `open_workspace` imports most of them)."""

__version__ = "0.1.0"  # keep equal to pyproject.toml's `version`
