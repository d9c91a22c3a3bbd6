"""The full accept queue of ``timeout_before_send``: filling a listener's queue so that the
kernel drops a client's SYN, and checking that no client got in.

The full accept queue, as measured on Linux 6.18 (x86_64): ``listen(0)`` admits one
completed connection (the queue is full when its length *exceeds* the backlog; with
``listen(n)``, n + 1); every later SYN is dropped: a non-blocking connect is ``SYN_SENT``
when ``connect_ex`` returns and still is 50 ms later; a connect with a 1.5 s timeout adds 2
to ``ListenOverflows`` (its SYN and the retransmission after the 1 s initial RTO) and times
out; with 0.3 s it raises ``TimeoutError`` after 0.30 s, every run, also with six test
processes on two CPUs. So any client timeout below a second is a connect timeout.
``fill_accept_queue`` does not assume the count: it adds fillers until the listener's
``TCP_INFO`` reports its queue full (``tcpi_unacked`` > ``tcpi_sacked``), and the proof
checks, in /proc/net/tcp, that the kernel holds no connection to the port but the fillers'
(``intruders``: a client that got in did not time out). Without ``TCP_INFO`` on a listener
(not Linux), fillers are added until one stays unconnected for 50 ms.
"""

from __future__ import annotations

import select
import socket
import struct

from leakcheck.faults import HarnessError

__all__ = ["accept_queue", "established_peers", "fill_accept_queue", "intruders", "is_established"]

_TCP_LISTEN = 10


def accept_queue(listener: socket.socket) -> tuple[int, int] | None:
    """(connections waiting in the accept queue, backlog) of a Linux listener, else None."""
    tcp_info = getattr(socket, "TCP_INFO", None)
    if tcp_info is None:
        return None
    try:
        info = listener.getsockopt(socket.IPPROTO_TCP, tcp_info, 32)
    except OSError:
        return None
    if len(info) < 32 or info[0] != _TCP_LISTEN:
        return None
    # struct tcp_info: 8 one-byte fields, then u32 rto, ato, snd_mss, rcv_mss, unacked,
    # sacked; for a listener the kernel puts the queue length and the backlog there
    unacked, sacked = struct.unpack_from("II", info, 24)
    return unacked, sacked


def established_peers(port: int) -> set[int] | None:
    """Remote ports of every connection to 127.0.0.1:``port`` the kernel holds (queued,
    accepted or closing), from /proc/net/tcp; None where there is no such file."""
    local = {f"0100007F:{port:04X}", f"7F000001:{port:04X}"}  # host byte order
    try:
        with open("/proc/net/tcp", encoding="ascii") as table:
            rows = [line.split() for line in table.readlines()[1:]]
    except OSError:
        return None
    # columns: sl, local address, remote address, state (0A: listening) ...
    return {int(row[2].rsplit(":", 1)[1], 16) for row in rows if row[1] in local and row[3] != "0A"}


def is_established(sock: socket.socket, wait: float) -> bool:
    _, writable, _ = select.select([], [sock], [], wait)
    return bool(writable) and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0


def fill_accept_queue(listener: socket.socket, fillers: list[socket.socket]) -> None:
    """Connect fillers to ``listener`` (listening, bound to 127.0.0.1) until its accept
    queue is full; each filler is appended to ``fillers`` as it is made (the caller closes
    them)."""
    address = listener.getsockname()
    for _ in range(256):
        queue = accept_queue(listener)
        if queue is not None and queue[0] > queue[1]:
            return
        filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        fillers.append(filler)
        filler.setblocking(False)
        filler.connect_ex(address)
        if queue is not None:
            # Linux: the queue has room, so this filler completes; wait for it
            if not is_established(filler, 1.0):
                break
        elif not is_established(filler, 0.05):
            return  # dropped: the queue is full (the measurement, where no TCP_INFO)
    raise HarnessError(
        "loopback: could not fill the accept queue of a listening socket on this "
        "kernel, so timeout_before_send cannot be forced (connects kept completing)"
    )


def intruders(port: int, fillers: list[socket.socket]) -> set[int]:
    """Client ports of connections the kernel established to the full listener on
    ``port`` other than the fillers' (Linux: from /proc/net/tcp; elsewhere none)."""
    peers = established_peers(port)
    if peers is None:
        return set()
    return peers - {filler.getsockname()[1] for filler in fillers}
