"""``comet eval``: evaluate one skill in one command (manifests, generated tasks, the user's .env)."""
