"""CLI subcommands: one module per command, each with ``register(subparsers)``."""
