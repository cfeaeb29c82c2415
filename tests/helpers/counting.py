"""A compute function that counts its calls (cache tests: a hit never calls it)."""


class Counter:
    """A compute function that counts its calls."""

    def __init__(self, value):
        self.value = value
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.value
