"""``leakcheck scan``: the secrets (a file, a report's canaries, each value once), the
inputs, the scanner, the report, masked, and the exit status."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from ..canaries import Secret
from ..detect import Scanner
from ..findings import Finding, SecretPieces
from ..forms import TAIL_BITS, TAIL_BITS_SECRETS, json_spelling, masked_bits_for
from ..report import ScanSummary, document, dump, path_uri
from ..serialize import map_strings
from .budget import Budget, batches_of, budget_for
from .console import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    UsageError,
    display,
    print_stderr,
    write_stdout,
)
from .console import named as named_path
from .inputs import Inputs, distinct_files, looks_like_report, total_size
from .output import Output, strings_of
from .secrets_file import OWN_ID, OWN_KINDS, read_secrets

TYPE_CHECKING = False  # not typing's: its import was a twentieth of a scan's start-up
if TYPE_CHECKING:
    from typing import IO, Any, BinaryIO

__all__ = ["scan_command"]


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _distinct(secrets: list[Secret]) -> tuple[list[Secret], list[list[str]]]:
    """Each value once, under its first id; the ids of each value given more than once."""
    first: dict[str, int] = {}
    kept: list[Secret] = []
    ids: dict[int, list[str]] = {}
    for secret in secrets:
        index = first.setdefault(secret.value, len(kept))
        if index == len(kept):
            kept.append(secret)
        else:
            ids.setdefault(index, [kept[index].id]).append(secret.id)
    return kept, list(ids.values())


def scan_command(args: argparse.Namespace, out: str | None, output: Output) -> int:
    if not args.secrets_file and not args.canaries_from:
        raise UsageError("give --secrets-file FILE, --canaries-from REPORT, or both")
    notes: list[str] = []  # stderr lines that name nothing of the user's
    budget = budget_for(args.engine)
    secrets, named = _read_secrets_files(
        args.secrets_file or [], budget, notes, early=not args.full_estimate
    )
    output.use(secrets)
    if out is not None:  # (its message names paths: masked with the secrets read)
        _check_output_is_no_input(out, args.paths, args.secrets_file or [])
    reports: list[str] = args.canaries_from or []
    # (a report named as a PATH: its canaries would not be searched for)
    _check_paths_are_not_reports(args.paths, reports)
    if reports:
        from .canaries_from import distinct_reports, load_all_canaries

        canaries, registered, lost = load_all_canaries(reports, budget.take(secrets))
        if registered and not args.secrets_file:
            notes.append(
                f"leakcheck: note: {registered} secret(s) that tests registered themselves "
                f"cannot be rebuilt from the report{'s' if len(reports) > 1 else ''}: pass "
                "them with --secrets-file"
            )
        if lost:
            notes.append(
                f"leakcheck: warning: {lost} canary(ies) cannot be rebuilt: their test's id "
                "(or MCP case's tool name) holds a secret and is masked in the report (keep "
                "secrets out of test ids and tool names)"
            )
        if not canaries and not secrets:
            reports = distinct_reports(reports)
            if len(reports) == 1:
                raise UsageError(f"report {reports[0]!r} lists no canary to search for")
            listed = _and([repr(r) for r in reports])
            raise UsageError(f"reports {listed} list no canary to search for")
        secrets += canaries
    # a value given twice is searched for once and reported under its first id
    secrets, duplicates = _distinct(secrets)
    given_twice = [
        f"the same secret is given as {_and(ids)}: searched for once, reported as {ids[0]}"
        for ids in duplicates
    ]
    said = [f"leakcheck: note: {note}" for note in given_twice]  # names ids, paths: masked
    output.use(secrets)
    # what to read, first: its size lets "auto" pick the engine that finishes first
    inputs = Inputs()
    for arg in args.paths:
        inputs.add(arg)
    size = total_size(inputs.targets)
    batches = batches_of(secrets)
    # the masked heads and tails reported: as likely by chance as for 20 secrets (said,
    # never silently)
    masked_bits = masked_bits_for(len(secrets))
    scale_notes = []
    if masked_bits > TAIL_BITS:
        scale_notes.append(
            f"{len(secrets):,} secrets are searched at once: a masked head or tail "
            f'("ending in 7KQ2", "ghp_ab12****") is reported only when its characters '
            f"carry {masked_bits:.1f} bits ({TAIL_BITS:g} for up to {TAIL_BITS_SECRETS}; 4 "
            "letters and digits carry 23.8), as unlikely by chance as for 20 secrets "
            "(README: Masked pieces at scale); a weaker one is still masked"
        )
        notes += [f"leakcheck: note: {note}" for note in scale_notes]
    trusted: set[str] | None = None
    if out is not None or args.format != "text":  # else the report on stdout lists them
        said += [f"leakcheck: note: not read ({why}): {path}" for path, why in inputs.not_read]
    findings: list[Finding] = []
    needles, engines, unreported = 0, [], 0
    with _Reader(inputs, many=len(batches) > 1) as reader:
        for batch in batches:
            # one scanner at a time: many secrets take bounded memory (see budget.BATCH_*)
            scanner = _scanner(batch, args.decode, args.engine, size, masked_bits)
            if len(batches) == 1:
                output.use(secrets, scanner)
                trusted = _check_named(named, output)
            else:  # what the masker needs of it, so as not to build it again
                output.learn(scanner)
            needles += scanner.needle_count
            engines.append(scanner.engine.name)
            findings += reader.scan(scanner)
            unreported += scanner.unreported_pieces
            del scanner
    if len(batches) > 1:  # each source's findings in the order one scanner gives them
        order = {name: n for n, name in enumerate(reader.names)}
        findings.sort(key=lambda f: (order.get(f.source, 0), f.offset, -f.length))
        findings = _other_batches_masked(findings, secrets)
    if trusted is None:  # several batches: the masker's detection batches too
        trusted = _check_named(named, output)
    sources = reader.sources
    # (SARIF's alone: pathlib and urllib.parse are imported for it only)
    uris = (
        {name: path_uri(target) for name, target in reader.targets.items()}
        if args.format == "sarif"
        else {}
    )
    summary = ScanSummary(
        findings=findings,
        sources=sources,
        secrets=[(s.id, s.kind) for s in secrets],
        needles=needles,
        engine="+".join(dict.fromkeys(engines)),
        decode=args.decode,
        errors=inputs.errors,
        not_read=inputs.not_read,
        notes=[*given_twice, *scale_notes],
        uris=uris,
        unreported=unreported,
    )
    code = EXIT_ERROR if inputs.errors else EXIT_FINDINGS if findings else EXIT_CLEAN
    if out is not None:
        found = f"{len(findings)} finding{'' if len(findings) == 1 else 's'}"
        said.append(f"leakcheck: {found}, report written to {display(str(out))}")
    if inputs.errors and (out is not None or args.format != "text"):
        said += [f"leakcheck: error: {error}" for error in inputs.errors]
    report = document(summary, args.format)
    # Mask every string of the report and of what stderr says, then dump (masking dumped
    # JSON could cut an escape in two). Nothing to mask, nothing built: a clean report
    # shows only our own words, numbers and ids (a JSON report lists the secrets' ids and
    # kinds: those a file spells out were checked above, a canary's names its test).
    ids_printed = args.format == "json" and not all(
        (s.id in trusted or OWN_ID.fullmatch(s.id)) and (s.kind in trusted or s.kind in OWN_KINDS)
        for s in secrets
    )
    if findings or inputs.errors or inputs.not_read or said or ids_printed:
        strings = strings_of(report)
        if args.format == "text":
            mask = output.masker([*strings, *said])
            report = map_strings(report, mask)
        else:  # (the masker made for the strings as JSON spells them too)
            from ..masking import masked_for_json  # (the masker's modules: only then)

            mask = output.masker([*strings, *map(json_spelling, strings), *said])
            report = map_strings(report, masked_for_json(mask))
        said = [mask(line) for line in said]
    text = dump(report, args.format)
    if out is not None:
        try:
            with open(out, "w", encoding="utf-8") as written:
                written.write(text)
        except OSError as exc:
            raise UsageError(
                f"cannot write report {named_path(out, to_write=True)}: {exc.strerror}"
            ) from None
    else:
        write_stdout(text)
    for line in notes + said:
        print_stderr(line)
    return code


def _other_batches_masked(findings: list[Finding], secrets: list[Secret]) -> list[Finding]:
    """``findings`` with the pieces of every secret masked in their excerpts and sources
    (``findings.SecretPieces``: in another case, escaped, as hex). A batch's scanner masks
    its own secrets' pieces; a secret of another batch in the same line was left to the
    masker of what is printed, which masks only raw spellings. The pieces looked up are
    those of the secrets with one in these texts (not an index of every secret's)."""
    if not findings:
        return findings
    from .._values import replace

    pieces = SecretPieces.found_in(secrets, [t for f in findings for t in (f.excerpt, f.source)])
    out = []
    for finding in findings:
        excerpt, source = pieces.mask(finding.excerpt), pieces.mask(finding.source)
        if (excerpt, source) != (finding.excerpt, finding.source):
            finding = replace(finding, excerpt=excerpt, source=source)
        out.append(finding)
    return out


class _Reader:
    """The inputs, read once per batch of secrets: stdin, which cannot be read twice, is
    kept in a temporary file when there are several batches."""

    def __init__(self, inputs: Inputs, many: bool) -> None:
        self.inputs, self.many = inputs, many
        self.sources = 0
        self.targets: dict[str, str] = {}  # the name shown -> the path as given
        self.names: list[str] = []
        self._stdin: IO[bytes] | None = None
        self._first = True

    def __enter__(self) -> _Reader:
        return self

    def __exit__(self, *_: object) -> None:
        if self._stdin is not None:
            self._stdin.close()

    def scan(self, scanner: Scanner) -> list[Finding]:
        findings: list[Finding] = []
        first, self._first = self._first, False
        for target in self.inputs.targets:
            if target is None:
                stream = self._stdin_stream(first)
                if stream is None:
                    continue
                if first:
                    self.sources += 1
                    self.names.append("<stdin>")
                findings += scanner.scan_stream(stream, "<stdin>")
                continue
            name = display(target)
            if first:
                self.targets[name] = target
            try:
                with open(target, "rb") as stream:
                    if first:
                        self.sources += 1
                        self.names.append(name)
                    findings += scanner.scan_stream(_content(stream), name)
            except _not_gzip() as exc:  # (a gzip file's errors too: corrupt, truncated)
                if first:
                    why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
                    self.inputs.errors.append(f"cannot read {name}: {why}")
        return findings

    def _stdin_stream(self, first: bool) -> BinaryIO | None:
        if sys.stdin is None:
            if first:
                self.inputs.errors.append("cannot read <stdin>: it is closed")
            return None
        if not self.many:
            return sys.stdin.buffer
        if self._stdin is None:  # the first batch: a copy for the others
            import shutil
            import tempfile

            self._stdin = tempfile.TemporaryFile()
            shutil.copyfileobj(sys.stdin.buffer, self._stdin, 1 << 20)
        self._stdin.seek(0)
        return self._stdin  # type: ignore[return-value]  # a BinaryIO but for its stub


#: Read as gzip: a file that begins with its magic (a rotated log, ``app.log.1.gz``). Its
#: compressed bytes hold no text to find: such a file was read as it is and called clean.
_GZIP_MAGIC = b"\x1f\x8b"


def _content(stream: BinaryIO) -> BinaryIO:
    """``stream`` itself, or for a gzip file its decompressed bytes (lines and columns of
    the decompressed text), as a stream that cannot seek, read once: seeking a gzip
    stream back decompresses it again (33 MiB with a finding at its end: 7.3 s against
    1.5 s), and its descriptor is the compressed file's."""
    if stream.peek(2)[:2] != _GZIP_MAGIC:  # type: ignore[attr-defined]  # a BufferedReader
        return stream
    import gzip
    import io

    class Gunzipped(io.RawIOBase):
        def __init__(self) -> None:
            self._gzip = gzip.GzipFile(fileobj=stream, mode="rb")

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            return self._gzip.readinto(buffer)

    return io.BufferedReader(Gunzipped(), 1 << 20)


def _not_gzip() -> tuple[type[BaseException], ...]:
    import zlib

    return (OSError, EOFError, zlib.error)


def _read_secrets_files(
    paths: list[str], budget: Budget, notes: list[str], *, early: bool = True
) -> tuple[list[Secret], list[tuple[str, int, str, str]]]:
    """The secrets of every ``--secrets-file`` (each file once), and the ids and kinds they
    spell out, by file. A file's own ids (``S<line>``) that an earlier file has too are
    told apart by the file's number (``S3@2``); an id a file spells out that an earlier
    file spells out too is refused, as it is within one file."""
    secrets: list[Secret] = []
    named: list[tuple[str, int, str, str]] = []
    owners: dict[str, str] = {}
    files = distinct_files(paths)
    for number, path in enumerate(files, start=1):
        try:
            loaded = read_secrets(path, budget.take(secrets), early=early)
        except UsageError as exc:
            # its path may hold a secret of another file, given before or after it: the
            # message is masked with every secret the command was given that can be read
            exc.secrets[:0] = [*secrets, *_readable_secrets(files[number:], budget, early)]
            raise
        notes += loaded.warnings
        for secret in loaded.secrets:
            earlier = owners.get(secret.id)
            if earlier is not None and earlier != path:
                if not OWN_ID.fullmatch(secret.id):
                    raise UsageError(
                        f"secrets file {display(path)!r}: an id that secrets file "
                        f"{display(earlier)!r} gives too (an id names one secret)"
                    )
                from .._values import replace  # (two files with ids alike: rarely)

                secret = replace(secret, id=f"{secret.id}@{number}")
            owners.setdefault(secret.id, path)
            secrets.append(secret)
        named += [(path, n, what, text) for n, what, text in loaded.named]
    return secrets, named


def _readable_secrets(paths: list[str], budget: Budget, early: bool) -> list[Secret]:
    """The secrets of those of ``paths`` that can be read (to mask an error with)."""
    found: list[Secret] = []
    for path in distinct_files(paths):
        try:
            found += read_secrets(path, budget.take(found), early=early).secrets
        except UsageError as exc:  # (one that cannot: what it held up to its error)
            found += exc.secrets
    return found


def _check_output_is_no_input(out: str, paths: list[str], secrets_files: list[str]) -> None:
    """``--output`` naming a file to scan, one inside a directory to scan or a secrets
    file would replace the evidence (or the secrets) with the report (and a second scan
    would call it clean)."""
    if not os.path.isfile(out):
        return  # (nothing there to replace)
    where = os.path.realpath(out)
    for path in paths:
        if path == "-":
            continue
        try:
            inside = os.path.isdir(path) and where.startswith(
                os.path.join(os.path.realpath(path), "")
            )
            same = inside or os.path.samefile(out, path)
        except OSError:  # (does not exist: nothing to replace)
            continue
        if same:
            raise UsageError(
                f"--output {named_path(out)} is also {'in ' if inside else ''}a PATH to scan: "
                "writing the report there would replace what is scanned; write it elsewhere"
            )
    for path in secrets_files:
        with contextlib.suppress(OSError):
            if os.path.samefile(out, path):
                raise UsageError(
                    f"--output {named_path(out)} is a --secrets-file: writing the report there "
                    "would replace the secrets; write it elsewhere"
                )


def _check_paths_are_not_reports(paths: list[str], reports: list[str]) -> None:
    """A leakcheck report named as a PATH, and not with ``--canaries-from``, is most often
    a glob's second match (``--canaries-from build/leakcheck-*.json`` gives the option
    only the first file): its canaries would silently go unsearched. Refused, with the
    fix; a report also given with ``--canaries-from`` is scanned as any artifact."""
    for path in paths:
        if path != "-" and looks_like_report(path, reports):
            why = (
                " (a shell glob after --canaries-from gives it only the first file): give "
                "each report its own --canaries-from"
                if reports
                else ": give it with --canaries-from REPORT (then scanned as a file too)"
            )
            raise UsageError(
                f"{display(path)!r} is a leakcheck report named as a PATH, not with "
                f"--canaries-from, so its canaries would not be searched for{why}"
            )


def _scanner(
    secrets: list[Secret], decode: bool, engine: str, size: int | None, masked_bits: float
) -> Scanner:
    """The scan's scanner. ``auto`` is the engine's choice (``engine.resolve_backend``: the
    automaton past HYPERSCAN_MAX_NEEDLES or for a needle hyperscan cannot compile), and the
    automaton if hyperscan still fails to compile."""
    try:
        return Scanner(
            secrets, decode=decode, backend=engine, input_bytes=size, masked_bits=masked_bits
        )
    except RuntimeError as exc:
        raise UsageError(str(exc)) from None
    except Exception as exc:  # noqa: BLE001 - only hyperscan's own error is handled
        hyperscan = sys.modules.get("hyperscan")
        if hyperscan is None or not isinstance(exc, getattr(hyperscan, "error", ())):
            raise
        if engine != "auto":
            raise UsageError(
                f"hyperscan cannot compile these needles ({exc}): a secret this long needs "
                "--engine ahocorasick"
            ) from None
    return Scanner(
        secrets, decode=decode, backend="ahocorasick", input_bytes=size, masked_bits=masked_bits
    )


def _check_named(named: list[tuple[str, int, str, str]], output: Output) -> set[str]:
    """The ids and kinds the secrets files spell out, once none holds a piece of a secret:
    they are printed in every report, and a kind inside every mask label."""
    if not named:
        return set()
    texts = [text for *_, text in named]
    mask = output.masker(texts)
    for path, n, what, text in named:
        if mask(text) != text:
            raise UsageError(
                f"secrets file {path!r} item {n}: its {what} holds a piece of a secret (ids "
                "and kinds are printed in every report: keep secrets out of them)"
            )
    return set(texts)
