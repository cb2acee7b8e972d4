"""Result files name the code that ran by a hash of the package source (`source_sha256`): it must
be the same for the same files wherever they lie, and change when any source file changes, is
added or is renamed (not when a byte-code cache appears)."""

import shutil
from pathlib import Path

import gpulab
from gpulab.benchmark import source_sha256, versions

PACKAGE = Path(gpulab.__file__).resolve().parent


def _copy(tmp_path) -> Path:
    dst = tmp_path / "gpulab"
    shutil.copytree(PACKAGE, dst, ignore=shutil.ignore_patterns("__pycache__"))
    return dst


def test_a_copy_hashes_like_the_package_and_versions_records_it(tmp_path):
    copy = _copy(tmp_path)
    assert source_sha256(copy) == source_sha256() == versions()["gpulab_source_sha256"]
    (copy / "radix" / "__pycache__").mkdir(exist_ok=True)
    (copy / "radix" / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (copy / "notes.txt").write_text("not source")
    assert source_sha256(copy) == source_sha256()


def test_any_source_change_changes_the_hash(tmp_path):
    copy = _copy(tmp_path)
    before = source_sha256(copy)
    cu = copy / "radix" / "kernels.cu"
    cu.write_text(cu.read_text() + "\n// one more line\n")
    edited = source_sha256(copy)
    assert edited != before
    (copy / "extra.py").write_text("")
    added = source_sha256(copy)
    assert added != edited
    (copy / "extra.py").rename(copy / "extra2.py")
    assert source_sha256(copy) not in (before, edited, added)
