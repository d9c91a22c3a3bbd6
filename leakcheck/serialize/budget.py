"""What one exposed object may produce, and the exception attributes that carry text."""

from __future__ import annotations

#: Exception attributes that carry text a careless wrapper forwards (httpx ``.request``,
#: ``json.JSONDecodeError.doc``, ``subprocess.CalledProcessError.cmd``/``.stderr``, ...).
TEXT_ATTRIBUTES = (
    "request",
    "response",
    "doc",
    "cmd",
    "stderr",
    "stdout",
    "output",
    "filename",
    "filename2",
    "url",
    "headers",
    "body",
    "reason",
    "text",
    "detail",
)
MAX_DEPTH = 32

#: A string (or bytes) this long or longer is searched where it is, once, as its own text:
#: never copied into the whole-JSON or repr texts, where a placeholder stands for it.
INLINE_MAX = 64 * 1024
#: What one exposed object may produce: its whole-JSON text and its repr are each written
#: up to this many characters (8 MiB; strings of INLINE_MAX and more are not counted: they
#: are searched where they are). Whatever lies beyond is reported "not inspected: over
#: budget", never dropped silently.
BUDGET_CHARS = 8 * 1024 * 1024
#: Fields (string leaves and keys) of one exposed object reported one by one, with their
#: path; those beyond are still searched, in the whole-JSON text.
FIELD_BUDGET = 100_000
#: Ints with more bits than this cannot be written as decimal text (``sys.int_info``'s
#: ``default_max_str_digits``): such an int is reported as not inspected.
INT_TEXT_BITS = 10_000
#: Keys longer than this are shortened in the paths that name them (the key itself is
#: still a field of its own).
PATH_KEY_CHARS = 200
