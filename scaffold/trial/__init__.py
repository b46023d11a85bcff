"""One trial from workspace to record: the runner, what the agent changed, the start gate.

Nothing is imported here: the session imports the start gate at collection, and the runner (which
brings validation, rubrics and the reports' transcript) only with the first trial."""
