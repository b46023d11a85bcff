"""Reports built from trial records alone (no pytest needed): summary.md, and more to come."""
