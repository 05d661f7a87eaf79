"""Pausing the cyclic garbage collector around work that allocates a lot of long-lived objects.

Loading a big session file and importing a layer's pydantic models both allocate hundreds of
thousands of objects that live on and hold no garbage cycles. Left alone, the collector scans
them again and again as they age, and one full collection in a kernel (IPython, widgets and
all) holds the GIL long enough to be felt: the event loop stalls for that long even when the
work runs in a thread (measured on the first run's imports, ``bench/kernel_bench.py``).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector around a bulk load.

    On the way out, everything alive is promoted to the oldest generation (``gc.freeze()`` then
    ``gc.unfreeze()``, both O(1)) unless the application froze objects itself: loaded records are
    long-lived and hold no cycles, so scanning them as young objects (millions after a big load)
    would only cost time, twice.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if gc.get_freeze_count() == 0:
            gc.freeze()
            gc.unfreeze()
        if enabled:
            gc.enable()
