"""Comparing the checkpoint at a node with the namespace now, name by name, and the cells that
re-create what could not be stored (real manifests of the checkpoint store; the whole restore in
a kernel is in ``test_restore_kernel``)."""

from __future__ import annotations

from pathlib import Path

from pi_notebook.notebook.checkpoints import Manifest, SkippedValue, StoredValue, ValueOrigin
from pi_notebook.notebook.restore.plan import RestorePlan, compare, recreate_cells

A, B, C = "aa" * 32, "bb" * 32, "cc" * 32


def stored(digest: str, kind: str = "pandas.DataFrame", size: int = 2_500_000) -> StoredValue:
    return StoredValue(hash=digest, type=kind, size=size)


def unpicklable(count: int, source: str, identity: str | None = "1:100") -> SkippedValue:
    origin = ValueOrigin(count, f"cell{count}", source)
    return SkippedValue("_io.TextIOWrapper", "cannot be pickled", False, origin, identity)


def test_each_name_is_restored_removed_kept_or_listed_with_its_cell() -> None:
    there = Manifest(
        3,
        "e1",
        "run_start",
        0.0,
        values={"df": stored(A), "n": stored(B, "int", 5), "model": stored(C)},
        skipped={
            "log": unpicklable(2, "log = open('a')\nrows = iter(df)"),
            "rows": unpicklable(2, "log = open('a')\nrows = iter(df)"),
            "gen": unpicklable(1, "gen = (x for x in df)"),
            "conn": unpicklable(4, "conn = connect()"),
            "big": SkippedValue("numpy.ndarray", "over the 2 GB cap"),
        },
    )
    now = Manifest(
        7,
        "e9",
        "manual",
        0.0,
        values={"df": stored(B), "n": stored(B, "int", 5), "extra": stored(A, "int", 5)},
        skipped={"conn": unpicklable(4, "conn = connect()"), "log": unpicklable(6, "log = 1")},
    )
    changes = compare(there, now, failed={"model": "No module named 'gone'"})
    table = [(c.name, c.change, c.note) for c in changes]
    assert table == [
        ("df", "restored", "2.5 MB"),
        ("extra", "removed", "did not exist there"),
        ("big", "unrestorable", "over the 2 GB cap"),
        ("gen", "unrestorable", "cannot be pickled"),
        ("log", "unrestorable", "cannot be pickled"),
        ("model", "unrestorable", "No module named 'gone'"),
        ("rows", "unrestorable", "cannot be pickled"),
        ("conn", "kept", "made by the same cell"),
        ("n", "kept", ""),
    ]
    cells = recreate_cells(changes)
    # each cell once, in the order they ran; the value over the cap has no known cell
    assert [(c.label, c.names) for c in cells] == [
        ("In [1]", ("gen",)),
        ("In [2]", ("log", "rows")),
    ]
    plan = RestorePlan("e1", "user: fit", checkpoint=there, now=now, variables=changes)
    plan.recreate = cells
    card = plan.card()
    assert card["checkpoint"] == "checkpoint #3 at entry e1" and card["state"] == "pending"
    assert [v["name"] for v in card["variables"]][:2] == ["df", "extra"]
    assert plan.worth_asking


def test_an_unpicklable_value_is_kept_only_when_it_is_the_very_same_object() -> None:
    """The same cell named as the maker in both checkpoints is not enough: the object must be
    the one the checkpoint saw (a file reopened by other code, or a maker looked up late,
    would otherwise be left as it is now)."""
    cell = "log = open('run.log', 'w')"
    # name → the object's identity at the node and now (None: a checkpoint from before they
    # were recorded)
    objects = {"same": ("7:100", "7:100"), "other": ("7:100", "7:200"), "unknown": (None, "7:100")}
    there, now = (
        Manifest(
            seq,
            f"e{seq}",
            "run_start",
            0.0,
            skipped={name: unpicklable(2, cell, ids[seq - 1]) for name, ids in objects.items()},
        )
        for seq in (1, 2)
    )
    changes = {c.name: c.change for c in compare(there, now)}
    assert changes == {"same": "kept", "other": "unrestorable", "unknown": "unrestorable"}


def test_a_refused_plan_offers_no_variables() -> None:
    plan = RestorePlan("e1", "user: fit", refusal="The checkpoint at e1 is damaged (x).")
    assert not plan.worth_asking
    card = plan.card()
    assert card["variables"] == [] and card["cells"] == [] and card["checkpoint"] == ""
    assert card["refusal"].startswith("The checkpoint at e1 is damaged")


async def test_a_missing_checkpoint_or_object_refuses_the_variables(tmp_path: Path) -> None:
    from pi_notebook.ai.types import UserMessage
    from pi_notebook.harness import InMemorySessionStorage, Session
    from pi_notebook.notebook.checkpoints import CheckpointStore
    from pi_notebook.notebook.restore.flow import Restorer

    session = Session.create(InMemorySessionStorage())
    first = session.append_message(UserMessage(content="first")).id
    second = session.append_message(UserMessage(content="second")).id
    store = CheckpointStore(tmp_path / "test.pi.ckpt")
    namespace: dict[str, object] = {"df": 1}
    now = Manifest(2, second, "manual", 0.0, values={"df": stored(B)})
    restorer = Restorer(session, namespace, None, store, run_code=lambda _src, _ns: ("", False))

    plan = await restorer.plan(second, first, now)  # no checkpoint on the way to the root
    assert plan.refusal.startswith("No checkpoint at or above") and not plan.worth_asking

    store.write_manifest(Manifest(1, first, "run_start", 0.0, values={"df": stored(A)}))
    plan = await restorer.plan(second, first, now)  # its object was never written
    assert plan.refusal.startswith(f"The checkpoint at {first[-8:]} cannot be used")
    assert "is missing" in plan.refusal and not plan.worth_asking
    assert plan.card()["variables"] == [] and namespace == {"df": 1}

    store.write_manifest(Manifest(3, second, "cell", 0.0))  # intact (it names no object)
    plan = await restorer.plan(second, second, "OSError: disk full")  # none of the namespace now
    assert "could be taken (OSError: disk full)" in plan.refusal
