"""Type stub of the package's public names; lazy-loader reads it to import each name's
submodule on first use."""

from .recorder import (
    CHECKPOINT_ENTRY as CHECKPOINT_ENTRY,
    CaptureReport as CaptureReport,
    Checkpoints as Checkpoints,
)
from .snapshot import select_values as select_values
from .store import (
    CheckpointError as CheckpointError,
    CheckpointStore as CheckpointStore,
    Loaded as Loaded,
    Manifest as Manifest,
    SkippedValue as SkippedValue,
    StoredValue as StoredValue,
    ValueOrigin as ValueOrigin,
    store_dir_for as store_dir_for,
)
