"""A TCP relay that delays every byte by a fixed time each way, standing in for a slow link.

The kernel here has no `netem`, and the links to delay carry HTTP and PostgreSQL's protocol
alike, which the HTTP fault proxy (tests/servers/fault_proxy.py) does not relay; so this works
on bytes. Each direction keeps its order: a chunk read at t is written at t + delay.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time


class DelayProxy:
    """`proxy = DelayProxy("10.0.0.1", ("10.0.0.5", 5432), 0.1)`; clients connect to
    `proxy.address` instead. Runs its own event loop in a daemon thread until close()."""

    def __init__(self, host: str, upstream: tuple[str, int], delay: float) -> None:
        self.upstream = upstream
        self.delay = delay
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._server = self._call(asyncio.start_server(self._relay, host, 0))
        self.address = (host, self._server.sockets[0].getsockname()[1])

    def _call(self, coroutine):  # type: ignore[no-untyped-def]
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            up_reader, upstream = await asyncio.open_connection(*self.upstream)
            await asyncio.gather(self._pipe(reader, upstream), self._pipe(up_reader, writer))
        except (OSError, asyncio.CancelledError):
            pass  # refused, reset, or the proxy closing: the client's connection ends
        finally:
            for end in (writer, upstream):
                if end is not None:
                    end.close()

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read chunks as they come, write each `delay` after it was read, in order."""
        queue: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

        async def later() -> None:
            while True:
                due, chunk = await queue.get()
                await asyncio.sleep(max(0.0, due - time.monotonic()))
                if not chunk:
                    with contextlib.suppress(OSError):
                        writer.write_eof()
                    return
                writer.write(chunk)
                await writer.drain()

        sending = asyncio.ensure_future(later())
        try:
            while chunk := await reader.read(65536):
                queue.put_nowait((time.monotonic() + self.delay, chunk))
            queue.put_nowait((time.monotonic() + self.delay, b""))
            await sending
        finally:
            sending.cancel()

    def close(self) -> None:
        """Stop accepting, drop every relayed connection, and end the loop's thread."""

        async def stop() -> None:
            self._server.close()
            relays = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in relays:
                task.cancel()
            await asyncio.gather(*relays, return_exceptions=True)

        self._call(stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()
