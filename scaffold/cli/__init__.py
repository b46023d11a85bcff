"""The ``comet`` command line: one module per command group, and ``comet eval``'s front door."""
