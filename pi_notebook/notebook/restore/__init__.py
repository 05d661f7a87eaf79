"""The restore half of the session tree as a time machine: moving back to a node of the tree
can bring the kernel's variables (from a checkpoint) and the notebook's cells (by undoing what
the agent did on the branch being left) back to how they were there, after one approval card.

``document_revert`` plans and applies the undo of the agent's cell changes, ``plan`` compares a
checkpoint with the live namespace and builds the card, ``flow`` asks and applies, and writes
the restore into the session. Nothing here is public API."""
