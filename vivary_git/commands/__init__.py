"""One module per command. Each has `register(subparsers)` and a `run(args) -> exit code`.

Keep top-level imports light: `git vivary -h` imports every command module.
"""
