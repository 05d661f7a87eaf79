"""The checkpoint store without a kernel: values stored once by content hash, the caps and
pruning, aliases, damaged and missing objects refused before anything is unpickled, the
files' permissions, and which names a checkpoint takes."""

from __future__ import annotations

import asyncio
import io
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from pi_notebook.harness import JsonlSessionStorage, Session
from pi_notebook.notebook.checkpoints import (
    CaptureReport,
    CheckpointError,
    Checkpoints,
    CheckpointStore,
    Manifest,
    select_values,
    store_dir_for,
)
from pi_notebook.notebook.checkpoints.origins import bound_names, find_origins
from pi_notebook.notebook.checkpoints.store import GC_MARGIN_SECONDS, move_store


def make(tmp_path: Path, namespace: dict[str, Any], **options: Any) -> tuple[Checkpoints, Session]:
    path = tmp_path / "analysis.pi.jsonl"
    session = Session.create(JsonlSessionStorage(path))
    session.append_custom("start", {})
    checkpoints = Checkpoints(lambda: session, lambda: path, namespace, **options)
    return checkpoints, session


def take(checkpoints: Checkpoints, session: Session) -> Manifest:
    session.append_custom("step", {})

    async def capture() -> CaptureReport | None:
        report = await checkpoints.capture("cell")
        await checkpoints.settled()  # the pruning after it
        return report

    report = asyncio.run(capture())
    assert report is not None and report.problem is None, report
    assert report.manifest is not None
    return report.manifest


def objects(root: Path) -> list[Path]:
    return [p for p in (root / "objects").rglob("*") if p.is_file()]


def test_the_store_lies_beside_the_session_file() -> None:
    assert store_dir_for(Path("/x/analysis.pi.jsonl")) == Path("/x/analysis.pi.ckpt")


@pytest.mark.parametrize("use_fork", [True, False], ids=["fork", "thread"])
def test_an_unchanged_value_is_stored_once(tmp_path: Path, use_fork: bool) -> None:
    if use_fork and not hasattr(os, "fork"):
        pytest.skip("no fork here")
    namespace: dict[str, Any] = {"rows": list(range(50_000)), "n": 1}
    checkpoints, session = make(tmp_path, namespace, use_fork=use_fork)
    first = take(checkpoints, session)
    namespace["n"] = 2
    second = take(checkpoints, session)
    assert first.values["rows"].hash == second.values["rows"].hash
    assert first.values["n"].hash != second.values["n"].hash
    root = checkpoints.store.root
    assert len(objects(root)) == 3  # rows once, n twice
    assert second.seq == first.seq + 1
    loaded = checkpoints.load(first)
    assert loaded.values == {"rows": list(range(50_000)), "n": 1} and not loaded.failed
    assert checkpoints.load(second).values["n"] == 2


def test_names_bound_to_one_object_come_back_as_one(tmp_path: Path) -> None:
    shared = [1, 2, 3]
    checkpoints, session = make(tmp_path, {"a": shared, "b": shared, "c": [1, 2, 3]})
    manifest = take(checkpoints, session)
    assert manifest.values["b"].alias_of == "a" and manifest.values["c"].alias_of is None
    values = checkpoints.load(manifest).values
    assert values["a"] is values["b"] and values["c"] is not values["a"]


def test_a_value_over_the_cap_is_skipped_with_a_note(tmp_path: Path) -> None:
    namespace = {"big": b"x" * 200_000, "small": "ok", "medium": b"y" * 60_000}
    checkpoints, session = make(tmp_path, namespace, max_size=100_000)
    manifest = take(checkpoints, session)
    assert set(manifest.values) == {"small", "medium"}
    assert manifest.skipped["big"].reason == "over the checkpoint's size cap (97.7 KB)"
    assert manifest.skipped["big"].serialisable
    assert not list((checkpoints.store.root / "tmp").iterdir())  # the cut-off file is gone
    assert "skipped big (bytes): over the checkpoint's size cap" in checkpoints.status()


def test_the_oldest_checkpoints_are_pruned_to_the_total_cap(tmp_path: Path) -> None:
    namespace: dict[str, Any] = {}
    checkpoints, session = make(tmp_path, namespace, max_total=250_000)
    taken = []
    for i in range(5):
        namespace["data"] = bytes([i]) * 100_000
        taken.append(take(checkpoints, session))
    store = checkpoints.store
    kept = store.manifests()
    assert [m.seq for m in kept] == [taken[-2].seq, taken[-1].seq]
    assert store.total_size() <= 250_000
    time.sleep(2 * GC_MARGIN_SECONDS)  # an object this new could be one a checkpoint reuses
    store.collect_garbage()
    assert len(objects(store.root)) == 2  # the objects only dropped checkpoints named are gone
    with pytest.raises(CheckpointError, match="missing"):
        store.load(taken[0])
    # a single checkpoint over the total stays: the newest is always kept
    namespace["data"] = b"z" * 300_000
    last = take(checkpoints, session)
    assert [m.seq for m in store.manifests()] == [last.seq]


def test_a_damaged_or_missing_object_is_refused_before_anything_is_loaded(
    tmp_path: Path,
) -> None:
    checkpoints, session = make(tmp_path, {"a": list(range(1000)), "b": "text"})
    manifest = take(checkpoints, session)
    store = checkpoints.store
    target = store.object_path(manifest.values["a"].hash)
    original = target.read_bytes()
    target.write_bytes(original[:-5])  # truncated
    with pytest.raises(CheckpointError, match="'a' is damaged"):
        checkpoints.load(manifest)
    target.write_bytes(original[:-5] + b"\x00" * 5)  # same size, other bytes
    with pytest.raises(CheckpointError, match="'a' is damaged"):
        checkpoints.load(manifest)
    target.unlink()
    with pytest.raises(CheckpointError, match="'a' is missing"):
        checkpoints.load(manifest)
    target.write_bytes(original)
    assert checkpoints.load(manifest).values["a"] == list(range(1000))


def test_a_damaged_manifest_is_left_out_and_the_nearest_checkpoint_above_is_found(
    tmp_path: Path,
) -> None:
    namespace: dict[str, Any] = {"x": 1}
    checkpoints, session = make(tmp_path, namespace)
    first = take(checkpoints, session)
    namespace["x"] = 2
    second = take(checkpoints, session)
    session.append_custom("later", {})  # a node with no checkpoint of its own
    assert checkpoints.checkpoint_for(session.leaf_id) == second
    assert checkpoints.checkpoint_for(first.entry_id) == first
    path = checkpoints.store.manifests_dir / f"{second.seq:06d}.json"
    path.write_text(path.read_text()[:20])
    checkpoints.store.forget()
    assert checkpoints.checkpoint_for(session.leaf_id) == first
    with pytest.raises(CheckpointError, match="not a valid checkpoint manifest"):
        Manifest.from_data(json.loads('{"version": 1, "seq": 1}'))


def test_a_value_that_does_not_unpickle_is_reported_not_raised(tmp_path: Path) -> None:
    checkpoints, session = make(tmp_path, {"gone": _Gone(), "n": 5})
    manifest = take(checkpoints, session)
    saved = globals().pop("_Gone")  # the class is no longer where the pickle names it
    try:
        loaded = checkpoints.load(manifest)
    finally:
        globals()["_Gone"] = saved
    assert loaded.values == {"n": 5}
    assert "AttributeError" in loaded.failed["gone"]


class _Gone:
    pass


def test_files_take_the_session_files_permissions(tmp_path: Path) -> None:
    checkpoints, session = make(tmp_path, {"a": [1, 2], "b": "x"})
    os.chmod(tmp_path / "analysis.pi.jsonl", 0o640)
    take(checkpoints, session)
    root = checkpoints.store.root
    for path in [root, *root.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o640 if path.is_file() else 0o750), (path, oct(mode))


def test_unpicklable_values_are_listed_with_the_cell_that_made_them(tmp_path: Path) -> None:
    handle = open(tmp_path / "f.txt", "w")  # noqa: SIM115 - the value under test
    namespace = {
        "f": handle,
        "gen": (i for i in range(3)),
        "nested": {"inner": io.StringIO("x"), "n": 1},
        "In": ["", "import os", "f = open('f.txt', 'w')\ngen = (i for i in range(3))"],
    }
    try:
        checkpoints, session = make(tmp_path, namespace)
        manifest = take(checkpoints, session)
    finally:
        handle.close()
    unpicklable = manifest.unserialisable
    assert set(unpicklable) == {"f", "gen", "nested"}
    assert "cannot pickle an open file" in unpicklable["f"].reason
    origin = unpicklable["gen"].origin
    assert origin is not None and origin.execution_count == 2 and "gen = (" in origin.source
    assert unpicklable["nested"].origin is None  # no cell binds it


def test_bound_names_and_origins() -> None:
    source = (
        "import numpy as np, os.path\nfrom x import y as z\nfor i in range(3):\n    acc = i\n"
        "def f():\n    local = 1\nclass C: pass\nwith open('p') as fh, ctx() as (a, b):\n    pass\n"
        "[k for k in range(3)]\n(w := 5)\nq += 1\n"
    )
    assert bound_names(source) == {
        "np", "os", "z", "i", "acc", "f", "C", "fh", "a", "b", "w", "q"
    }  # fmt: skip
    assert bound_names("%matplotlib inline\nx = 1\ny == 2\n!ls") == {"x"}  # IPython's syntax
    assert bound_names("x = (\nz=3\nw == 1") == {"x", "z"}  # no parse: line-start assignments
    cells = [(1, None, "x = 1"), (2, "c2", "y = 2"), (3, "c3", "x = 3")]
    found = find_origins(["x", "y", "nowhere"], cells)
    assert found["x"].execution_count == 3 and found["y"].cell_id == "c2"
    assert "nowhere" not in found


def test_what_a_checkpoint_takes_and_what_it_never_stores() -> None:
    import types

    secret = "sk-live-abcdefghijklmnop"
    environ = {"OPENAI_API_KEY": secret, "HOME": "/root", "LANG": "C"}
    namespace = {
        "df": [1],
        "_private": 1,
        "In": [],
        "Out": {},
        "get_ipython": print,
        "os": os,
        "mod": types.ModuleType("m"),
        "key": secret,
        "home": "/root",  # not a secret: kept
        "env": os.environ,
        "hidden_one": 3,
        "agent": _own_object(),
    }
    taken, refused = select_values(namespace, hidden={"hidden_one"}, environ=environ)
    assert [name for name, _ in taken] == ["df", "home"]
    assert set(refused) == {"key", "env"}
    assert refused["key"].reason == "environment variables are never stored"


def _own_object() -> object:
    from pi_notebook.notebook.checkpoints.store import ValueOrigin

    return ValueOrigin(None, None, "")


def test_a_failed_checkpoint_is_noted_not_raised(tmp_path: Path) -> None:
    blocker = tmp_path / "analysis.pi.ckpt"
    blocker.write_text("a file where the folder should be")
    checkpoints, _ = make(tmp_path, {"a": 1})
    report = asyncio.run(checkpoints.capture("cell"))
    assert report is None or report.problem is not None
    assert checkpoints.last is not None and checkpoints.last.problem
    assert "Last problem:" in checkpoints.status()


def test_a_collection_spares_objects_a_checkpoint_reuses_meanwhile(tmp_path: Path) -> None:
    namespace: dict[str, Any] = {"keep": b"k" * 1000}
    checkpoints, session = make(tmp_path, namespace)
    manifest = take(checkpoints, session)
    store = checkpoints.store
    digest = manifest.values["keep"].hash
    (store.manifests_dir / f"{manifest.seq:06d}.json").unlink()  # nothing names it now
    store.forget()
    store.touch(digest)  # a checkpoint being written found it in the store
    store.collect_garbage()
    assert store.has_object(digest)
    time.sleep(2 * GC_MARGIN_SECONDS)
    store.collect_garbage()
    assert not store.has_object(digest)


def test_the_checkpoints_follow_a_renamed_session_file(tmp_path: Path) -> None:
    checkpoints, session = make(tmp_path, {"a": 1})
    take(checkpoints, session)
    old, new = tmp_path / "analysis.pi.jsonl", tmp_path / "renamed.pi.jsonl"
    move_store(old, new)
    assert not store_dir_for(old).exists()
    assert len(CheckpointStore(store_dir_for(new)).manifests()) == 1
    store_dir_for(old).mkdir()  # a folder of that name exists already: nothing moves
    move_store(new, old)
    assert store_dir_for(new).is_dir()


def test_the_switch_and_caps_are_read_from_the_session(tmp_path: Path) -> None:
    checkpoints, session = make(tmp_path, {"a": 1})
    assert checkpoints.enabled and checkpoints.max_size == 2 << 30
    checkpoints.set_enabled(False, max_size=1000)
    fresh = Checkpoints(lambda: session, lambda: tmp_path / "analysis.pi.jsonl", {})
    assert not fresh.enabled and fresh.max_size == 1000 and fresh.max_total == 8 << 30
    assert asyncio.run(fresh.capture("manual")) is None  # off: nothing taken
    assert fresh.store.manifests() == []


def test_a_tensor_in_gpu_memory_is_listed_not_pickled() -> None:
    # stand-ins with the attributes torch and JAX arrays have (no GPU library needed)
    cuda_tensor = type("Tensor", (), {"__module__": "torch", "is_cuda": True})()
    cpu_tensor = type("Tensor", (), {"__module__": "torch", "is_cuda": False})()
    device = type("Device", (), {"platform": "gpu"})()
    jax_array = type("ArrayImpl", (), {"__module__": "jaxlib.xla_extension", "device": device})()
    taken, refused = select_values({"w": cuda_tensor, "c": cpu_tensor, "j": jax_array})
    assert [name for name, _ in taken] == ["c"]
    assert set(refused) == {"w", "j"}
    assert not refused["w"].serialisable and "GPU memory" in refused["w"].reason
