"""``comet eval``: evaluate one skill in one command (scaffold.cli.eval.command), its pytest session
run in-process."""
