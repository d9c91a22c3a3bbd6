"""bench/run.py and bench/corpus.py: the pieces that run without timing anything.

``--big-gib 0`` skips the memory test (it crashed seeking before the file's start); the
corpus's ``collect`` hands back each kind's pieces without changing the bytes written; the
targets are judged against issue 14's goals.
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from types import ModuleType

import pytest
from conftest import bench_module


def _bench_run() -> ModuleType:
    return bench_module("run")


@pytest.mark.parametrize("gib", [0.0, 0.00001])
def test_memory_test_skips_a_big_file_too_small(tmp_path: Path, gib: float) -> None:
    run = _bench_run()
    args = argparse.Namespace(big_gib=gib, repeat=1, profile=False)
    result = run.memory_test(args, tmp_path, tmp_path / "s.json", [], b"x", 1 << 23, None)
    assert "skipped" in result
    assert not (tmp_path / "big.log").exists()


def test_corpus_collect_keeps_the_bytes(tmp_path: Path) -> None:
    corpus = _bench_run().corpus_mod
    files = corpus.source_files()[:40]
    plain = corpus.build_corpus(tmp_path / "a.txt", 0.25, 3, files=files)
    kinds: dict[str, list[bytes]] = {"logs": [], "blobs": []}
    collected = corpus.build_corpus(tmp_path / "b.txt", 0.25, 3, files=files, collect=kinds)
    data = plain.read_bytes()
    assert collected.read_bytes() == data
    assert kinds["logs"] and kinds["blobs"]
    assert all(piece in data for piece in kinds["logs"] + kinds["blobs"])
    assert sum(map(len, kinds["logs"] + kinds["blobs"])) < len(data)  # source left out


def test_targets_judged_against_issue_14() -> None:
    run = _bench_run()
    rg = run.Row("rg -F -f -j1", 0.2, 64)
    e2e = {"leakcheck scan": {"seconds": 0.09, "decode": True, "engine": "hyperscan", "mib_s": 700}}
    big = {
        "mib": 1024,
        "seconds": 1.2,
        "decode": True,
        "peak_rss_mib": 210,
        "rg": {"seconds": 2.0},
        "clean": {"seconds": 0.9, "decode": True, "peak_rss_mib": 90, "rg": {"seconds": 2.0}},
    }
    decoding = {"logs": {"mib": 36, "mib_s": 499.0}}
    startup = {"seconds": 0.0612, "installed": "the wheel in a new venv"}
    targets = run.collect_targets(decoding, e2e, rg, big, 64, startup)
    judged = [(round(t["value"], 2), t["pass"]) for t in targets if t["issue"] == "14"]
    # decoding alone; 64 MiB corpus, clean big file, planted big file (time / rg's);
    # start-up (ms); RSS
    assert judged == [
        (499.0, False),
        (0.45, True),
        (0.45, True),
        (0.6, False),
        (61.2, False),
        (210, False),
    ]
    met = run.collect_targets(decoding, e2e, rg, big, 64, {**startup, "seconds": 0.0598})
    assert [t["pass"] for t in met if t["what"].startswith("start-up")] == [True]
    assert not any(
        t["what"].startswith("start-up")
        for t in run.collect_targets(decoding, e2e, rg, big, 64, {})
    )
    run.print_targets(targets)  # formats every kind of value


def test_ripgrep_gets_only_the_needles_it_can_take() -> None:
    """rg -F -f refuses a pattern file with invalid UTF-8 (the UTF-16-LE needle of a
    non-ASCII secret) and cannot hold a newline in a line: those needles are skipped."""
    rg_pattern = _bench_run().rg_pattern
    assert rg_pattern(b"lck_abc\x00d")  # NULs are fine
    assert rg_pattern("é€".encode())
    assert not rg_pattern("é".encode("utf-16-le"))
    assert not rg_pattern(b"-----BEGIN\nKEY")


def test_a_failed_ripgrep_run_stops_the_benchmark() -> None:
    rg_checked = _bench_run().rg_checked
    assert rg_checked([(0.1, 1, 5.0), (0.1, 0, 5.0)], "ok") == [(0.1, 1, 5.0), (0.1, 0, 5.0)]
    with pytest.raises(SystemExit, match="exit 2"):
        rg_checked([(0.0, 2, 5.0)], "the corpus")


def test_each_copy_of_the_corpus_in_the_big_file_is_varied() -> None:
    varied = _bench_run().varied
    data = b"GET /v1/items?q=%2Fabc 200 token=ab12CD\n"
    assert varied(data, 0) is data
    copies = [varied(data, k) for k in range(16)]
    assert len(set(copies)) == 16  # no copy repeats another
    for copy in copies:
        assert len(copy) == len(data)
        assert copy.startswith(b"GET /") and copy.endswith(b"CD\n")
        # an escape is still an escape
        assert re.search(rb"\?[a-z]=%[0-9]F[a-z]{3} [0-9]{3} ", copy)


def test_the_plugin_bench_measures_the_tree_pythonpath_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A worktree of another commit on ``PYTHONPATH`` comes before the bench's own tree:
    after it, a comparison of two trees measured the bench's own tree twice."""
    overhead = bench_module("plugin_overhead")
    monkeypatch.setenv("PYTHONPATH", "/elsewhere/other-tree")
    assert overhead._pythonpath().split(os.pathsep) == ["/elsewhere/other-tree", str(overhead.ROOT)]
    monkeypatch.delenv("PYTHONPATH")
    assert overhead._pythonpath() == str(overhead.ROOT)
