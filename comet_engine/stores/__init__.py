"""Run stores: memory, file directory and SQLite, all with compare-and-swap on a run revision."""

from comet_engine.stores.base import Store, StoredRun
from comet_engine.stores.memory import MemoryStore

__all__ = ["MemoryStore", "Store", "StoredRun"]
