"""``comet eval``: evaluate one skill in one command (scaffold.cli.main.eval.command), its pytest session
run in-process."""
