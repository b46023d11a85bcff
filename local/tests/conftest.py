"""``pytest local/tests`` collects the suite once: the original's path (tasks/test_tasks.py, an alias of
test_tasks.py here) runs only when named."""

collect_ignore = ["tasks"]
