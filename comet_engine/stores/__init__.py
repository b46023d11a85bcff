"""Run stores: memory, file directory and SQLite, all with compare-and-swap on a run revision."""

from comet_engine.stores.base import Store, StoredRun
from comet_engine.stores.file import FileStore
from comet_engine.stores.memory import MemoryStore
from comet_engine.stores.sqlite import SQLiteStore

__all__ = ["FileStore", "MemoryStore", "SQLiteStore", "Store", "StoredRun"]
