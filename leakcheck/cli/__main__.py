"""``python -m leakcheck.cli``: the ``leakcheck`` command."""

import sys

from . import main

if __name__ == "__main__":  # imported (as the facade tests import every module): nothing runs
    sys.exit(main())
