"""Regenerate corpora/exceptions/ssh.json: the error texts asyncssh and paramiko produce for
each SSH stage, recorded against leakcheck's own loopback SSH server.

The texts are masked (every canary replaced by «canary:KIND:FORM») and normalized (the
port, temporary paths, addresses and key fingerprints, which change from run to run), so
two runs on one machine write the same file. After a library upgrade, diff the new file
against the reviewed one: a changed text is a changed leak surface.

Run: python scripts/record_ssh_exceptions.py          (writes the file)
     python scripts/record_ssh_exceptions.py --check  (exit 1 if the file is out of date)
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

# the recorders live in the repository, not in the installed package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from recorders.ssh import record_exception_texts  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "corpora" / "exceptions" / "ssh.json"


def render(data: dict[str, object]) -> str:
    return json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--check", action="store_true", help="compare with the file on disk, write nothing"
    )
    args = parser.parse_args(argv)
    text = render(record_exception_texts())
    if args.check:
        current = OUT.read_text(encoding="utf-8") if OUT.exists() else ""
        if current != text:
            print(f"{OUT} is out of date: run python scripts/record_ssh_exceptions.py")
            return 1
        print(f"{OUT} is up to date")
        return 0
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
