class Cache:
    def __init__(self):
        self._items = {}

    def set(self, key, value):
        self._items[key] = value

    def get(self, key, default=None):
        return self._items.get(key, default)
