"""A small process-wide memo: what the closed loop keeps in memory between encoders."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable, Optional

__all__ = ["Memo"]


class Memo:
    """Values by key, computed once per process, the ``size`` most recently computed kept.

    Parameters
    ----------
    size : int, optional
        Most values held; the oldest is dropped before a new one is computed, so no more
        than ``size`` are ever held. None: every one.

    Notes
    -----
    Thread-safe: one lock around the lookup and the computation, so two threads asking for
    the same key compute it once.
    """

    def __init__(self, size: Optional[int] = None):
        self.size = size
        self._values: OrderedDict = OrderedDict()
        self._lock = threading.RLock()

    def get(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """The value of ``key``, ``compute()`` when it is not held."""
        with self._lock:
            if key not in self._values:
                while self.size is not None and self._values and len(self._values) >= self.size:
                    self._values.popitem(last=False)     # dropped before the new one is made
                self._values[key] = compute()
            return self._values[key]

    def values(self) -> list:
        """The values held, oldest first."""
        with self._lock:
            return list(self._values.values())

    def clear(self) -> None:
        """Forget every value."""
        with self._lock:
            self._values.clear()
