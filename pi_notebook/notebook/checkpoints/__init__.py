"""Checkpoints of the kernel's namespace, kept beside the session file.

When an ``%%agent`` run starts and after each cell the agent runs, the user's variables are
recorded: each value pickled once (cloudpickle) and stored by the hash of its bytes in
``<session>.ckpt/`` (``analysis.pi.jsonl`` → ``analysis.pi.ckpt/``), so an unchanged variable
costs nothing at the next checkpoint. A checkpoint is a small manifest keyed by the session
entry that was the leaf when it was taken. Modules, IPython's names, pi_notebook's objects and
the environment are never stored; values that cannot be pickled are listed with the cell that
made them. ``%checkpoint on|off|status`` is the switch.

API for restore
---------------
``NotebookAgent.checkpoints`` is this kernel's :class:`Checkpoints`.

- ``checkpoints.checkpoint_for(entry_id)`` → the :class:`Manifest` of the newest checkpoint at
  ``entry_id`` or the nearest entry above it on its branch (``Session.get_branch``), or None.
- ``checkpoints.load(manifest)`` → :class:`Loaded` (``values``: name → object; ``failed``: name →
  why it did not unpickle). It verifies every stored object first and raises
  :class:`CheckpointError` for a missing or damaged one; it never touches the namespace.
- A :class:`Manifest` has ``values`` (name → :class:`StoredValue`: hash, type, size),
  ``skipped`` (name → :class:`SkippedValue`: type, reason), and ``unserialisable`` (the skipped
  values that cannot be pickled, each with its ``origin``: the :class:`ValueOrigin` cell —
  execution count, cell id, source; or the code the agent ran with ``run_python``, with neither
  count nor id — that would re-create it, and its ``identity``: which object it was, so two
  checkpoints tell the very same object from a new one).
- :func:`select_values` (namespace) → the names a checkpoint would take now, to tell
  "removed" (taken now, absent from the checkpoint) from "left as is" (never taken).
- ``await checkpoints.settled()`` waits for checkpoints still being written;
  ``await checkpoints.capture("restore")`` takes one at the session's leaf now (after a restore
  entry is appended, say) and waits for it; ``capture_soon(reason)`` does not wait.
"""

import lazy_loader as _lazy

# The public names and their submodules are listed once, in __init__.pyi; each submodule is
# imported when one of its names is first used, so importing the package loads none of them.
__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
