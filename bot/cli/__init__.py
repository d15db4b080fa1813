"""`eva` and its subcommands: what `eva X` does."""
