"""The entry points leakcheck reads without importlib.metadata are the ones it would read."""

from __future__ import annotations

import importlib.metadata as md
import sys
import zipfile
from pathlib import Path

import pytest

from leakcheck import extensions

read_on_path = extensions._entries_on_path.__wrapped__  # the uncached reading


def _metadata(group: str) -> list[tuple[str, str]]:
    return sorted((e.name, e.value) for e in md.entry_points(group=group))


def _ours(group: str) -> list[tuple[str, str]]:
    on_path = read_on_path()
    assert on_path is not None
    return sorted(on_path.get(group, []))


def _dist(root: Path, stem: str, text: str) -> None:
    info = root / f"{stem}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {stem.split('-')[0]}\n")
    (info / "entry_points.txt").write_text(text)


def test_every_group_of_this_environment_reads_the_same() -> None:
    groups = {group for group in (read_on_path() or {})}
    assert {"pytest11", "leakcheck.plugins", "leakcheck.codecs", "console_scripts"} <= groups
    for group in groups:
        assert _ours(group) == _metadata(group), group


def test_first_distribution_on_the_path_wins_and_comments_are_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    _dist(
        first,
        "Lc_Entries.Probe-1.0",
        "# a comment\n\n[lc.test-entries]\nx = first_module:thing\n  y=first_y  \n[other]\nz = o\n",
    )
    _dist(second, "lc_entries_probe-2.0", "[lc.test-entries]\nx = second_module\n")
    _dist(second, "lc_entries_other-1.0", "[lc.test-entries]\nw = other_module\n")
    monkeypatch.syspath_prepend(str(second))
    monkeypatch.syspath_prepend(str(first))
    expected = [("w", "other_module"), ("x", "first_module:thing"), ("y", "first_y")]
    assert _metadata("lc.test-entries") == expected
    assert _ours("lc.test-entries") == expected


def test_a_zip_on_the_path_is_read_by_importlib_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("lc_zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: z\n")
        bundle.writestr("lc_zipped-1.0.dist-info/entry_points.txt", "[lc.test-zip]\nq = zq\n")
    monkeypatch.syspath_prepend(str(archive))
    assert read_on_path() is None  # not read by hand: where it could differ
    monkeypatch.setattr(extensions, "_entries_on_path", read_on_path)
    assert list(extensions._entries.__wrapped__("lc.test-zip")) == [("q", "zq")]


def test_another_distribution_finder_is_left_to_importlib_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Finder:
        @staticmethod
        def find_distributions(*args: object, **kwargs: object) -> list[object]:
            return []

    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Finder()])
    assert read_on_path() is None
