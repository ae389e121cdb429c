"""The HTTP transport's reads are timed per phase (issue 41 item 6): the headers and the whole request within the
request's timeout, and once the headers are in, a body that goes quiet for the read gap ends at once. A dripping
server (a byte now and then, headers or body) never holds a connection past the timeout. Real sockets on 127.0.0.1:
a raw asyncio server writes exactly the bytes (and the silences) a misbehaving server would."""
from __future__ import annotations

import asyncio
import time

import pytest

from kgfed.endpoints.client import HttpClient
from kgfed.endpoints.http import HttpEndpoint
from kgfed.endpoints.transport import AiohttpTransport, Request, TransportTimeout
from kgfed.sparql.errors import EndpointTimeout

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+json\r\nContent-Length: 100000\r\n\r\n"


class Drip:
    """A server that answers every request in one of three ways: `stall` (headers, a little body, then silence),
    `body` (headers, then a byte every `every` s) or `headers` (the status line and headers a byte at a time)."""

    def __init__(self, mode: str, every: float = 0.2):
        self.mode, self.every = mode, every
        self.open = 0  # connections the server still holds
        self.closed_after: list[float] = []  # seconds each connection lasted

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        started = time.monotonic()
        self.open += 1
        try:
            await reader.readuntil(b"\r\n\r\n")
            if self.mode == "headers":
                for byte in HEAD:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(self.every)
            writer.write(HEAD + b'{"head": {"vars": ["x"]}, ')
            await writer.drain()
            while True:
                await asyncio.sleep(self.every if self.mode == "body" else 3600)
                writer.write(b" ")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            self.open -= 1
            self.closed_after.append(time.monotonic() - started)
            writer.close()

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}/sparql"

    async def __aexit__(self, *exc) -> None:
        self.server.close()


async def test_a_body_that_goes_quiet_ends_at_the_read_gap_not_the_timeout():
    drip = Drip("stall")
    async with drip as url:
        transport = AiohttpTransport(read_gap=1.0)
        started = time.monotonic()
        try:
            with pytest.raises(TransportTimeout, match=r"^the body stopped coming for 1 s after the headers$"):
                await transport.send(Request("GET", url, timeout=30))
        finally:
            await transport.aclose()
        assert time.monotonic() - started < 10  # the old transport waited for the whole 30 s


@pytest.mark.parametrize("mode", ["body", "headers"])
async def test_a_dripping_server_is_left_at_the_timeout(mode):
    drip = Drip(mode)
    async with drip as url:
        transport = AiohttpTransport(read_gap=1.0)  # a byte every 0.2 s never trips the gap: the timeout does
        started = time.monotonic()
        try:
            with pytest.raises(TransportTimeout, match=r"^no answer within 2 s$"):
                await transport.send(Request("GET", url, timeout=2))
        finally:
            await transport.aclose()
        assert time.monotonic() - started < 10
        for _ in range(50):  # the server sees the connection dropped
            if not drip.open:
                break
            await asyncio.sleep(0.1)
        assert drip.open == 0


async def test_many_dripping_connections_all_end_and_say_so_in_one_line():
    drip = Drip("body", every=0.5)
    async with drip as url:
        async with HttpClient(timeout=2, retries=0, per_host=200) as client:
            endpoint = HttpEndpoint(url, client)
            outcomes = await asyncio.gather(*(endpoint.select(f"SELECT * WHERE {{ ?s ?p ?o }} # {i}") for i in range(100)),
                                            return_exceptions=True)
        assert all(isinstance(o, EndpointTimeout) for o in outcomes), {type(o).__name__ for o in outcomes}
        assert all(str(o).endswith("timed out after 2 s: simplify the query, batch less, or raise --timeout")
                   for o in outcomes)
        for _ in range(50):
            if not drip.open:
                break
            await asyncio.sleep(0.1)
        assert drip.open == 0 and len(drip.closed_after) == 100 and max(drip.closed_after) < 10
