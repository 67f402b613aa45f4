"""A link delay in user space, for kernels without netem: forwards every Ethernet frame between
two interfaces, each `delay` seconds after it arrived, in order, both ways.

`Network.delay` splices it into one host's link (the host keeps its address and MAC, so a
client that discovers peers by address, as the Cassandra driver does, still reaches it) and
runs it in a namespace of its own, where no IP stack answers for the frames. Frames carry their
virtio-net header (PACKET_VNET_HDR), so the kernel's segmentation and checksum offloads pass
through as they came. Run as `python delayer.py IFACE IFACE SECONDS`; prints one line once it
forwards, and stops on SIGTERM.
"""

from __future__ import annotations

import collections
import contextlib
import select
import signal
import socket
import sys
import threading
import time

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_VNET_HDR = 15
PACKET_OUTGOING = 4  # a frame this host sent: its own forwarding, never forwarded back
LARGEST = 256 * 1024  # a segmentation-offloaded frame is up to 64 KiB; room to spare


def _socket(interface: str) -> socket.socket:
    link = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    link.setsockopt(SOL_PACKET, PACKET_VNET_HDR, 1)
    link.bind((interface, 0))
    return link


def forward(source: socket.socket, sink: socket.socket, delay: float) -> None:
    """Frames from `source` to `sink`, each `delay` after it arrived; for ever."""
    waiting: collections.deque[tuple[float, bytes]] = collections.deque()
    while True:
        wait = max(0.0, waiting[0][0] - time.monotonic()) if waiting else None
        readable, _, _ = select.select([source], [], [], wait)
        if readable:
            while True:
                try:
                    frame, address = source.recvfrom(LARGEST, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                if address[2] != PACKET_OUTGOING:
                    waiting.append((time.monotonic() + delay, frame))
        now = time.monotonic()
        while waiting and waiting[0][0] <= now:
            with contextlib.suppress(OSError):  # refused (a link down a moment): lost, as on a wire
                sink.send(waiting.popleft()[1])


def main(first: str, second: str, delay: float) -> None:
    a, b = _socket(first), _socket(second)
    for source, sink in ((a, b), (b, a)):
        threading.Thread(target=forward, args=(source, sink, delay), daemon=True).start()
    print(f"delaying {first} <-> {second} by {delay:g} s each way", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    stop.wait()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
