"""bench.latency_proxy acknowledges each upstream answer's headers at once (TCP_QUICKACK).

Virtuoso writes a large answer's headers and body in two writes with Nagle on: the body waits for the
headers' ACK, which a kept-alive connection delays ~40 ms. The proxy (the benchmark's stand-in for the
network) and `replay` (the server's own time beside the bound) must not add that stall, which kgfed's own
transport does not pay. Checked without timing: Linux reports a socket in delayed-ACK ("pingpong") mode
as TCP_QUICKACK 0, and `ack_now` takes it out of that mode while the body is still to come.
"""
from __future__ import annotations

import asyncio
import socket

import aiohttp
import pytest

from bench import latency_proxy
from bench.latency_proxy import LatencyProxy, ack_now, replay, rounds

pytestmark = pytest.mark.skipif(not hasattr(socket, "TCP_QUICKACK"), reason="TCP_QUICKACK is Linux-only")

BODY = b'{"head": {"vars": []}, "results": {"bindings": []}, "pad": "' + b"x" * 40_000 + b'"}'


async def split_writes_server() -> asyncio.Server:
    """A keep-alive HTTP server that, like Virtuoso on a large answer, writes the headers, then the body."""
    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            if length:
                await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/sparql-results+json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(BODY))
            await writer.drain()
            await asyncio.sleep(0.005)  # the body comes after the client has read the headers
            writer.write(BODY)
            await writer.drain()
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


def quickack(response: aiohttp.ClientResponse) -> int:
    sock = response.connection.transport.get_extra_info("socket")
    return sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK)


def test_ack_now_takes_a_kept_alive_connection_out_of_delayed_ack_mode():
    async def run() -> list[tuple[int, int, bytes]]:
        server = await split_writes_server()
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/sparql"
        seen = []
        try:
            async with aiohttp.ClientSession() as session:
                for _ in range(4):
                    async with session.get(url) as response:
                        before = quickack(response)
                        ack_now(response)
                        seen.append((before, quickack(response), await response.read()))
        finally:
            server.close()
            await server.wait_closed()
        return seen

    seen = asyncio.run(run())
    assert all(body == BODY for _, _, body in seen)
    # kept alive, the connection delays its ACKs (0) until ack_now, then acknowledges at once (1)
    assert [before for before, _, _ in seen[1:]] == [0, 0, 0]
    assert [after for _, after, _ in seen] == [1, 1, 1, 1]


def test_the_proxy_and_replay_acknowledge_every_upstream_answer(monkeypatch):
    states: list[int] = []

    def recording_ack(response: aiohttp.ClientResponse) -> None:
        ack_now(response)
        if response.connection is not None:  # None: the whole answer had already arrived
            states.append(quickack(response))

    monkeypatch.setattr(latency_proxy, "ack_now", recording_ack)

    async def run() -> tuple[list[bytes], list[float]]:
        server = await split_writes_server()
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/sparql"
        try:
            async with LatencyProxy(url, delay=0.0, record=True) as proxy, aiohttp.ClientSession() as session:
                bodies = []
                for i in range(3):
                    async with session.post(proxy.url, data={"query": f"SELECT * WHERE {{ ?s ?p {i} }}"}) as response:
                        bodies.append(await response.read())
                log = list(proxy.log)
            seconds = await replay(url, rounds(log))
        finally:
            server.close()
            await server.wait_closed()
        return bodies, seconds

    bodies, seconds = asyncio.run(run())
    assert bodies == [BODY] * 3  # the proxy passes the server's answer through unchanged
    assert len(seconds) == 3  # three rounds replayed, one request each
    assert len(states) == 6 and set(states) == {1}  # 3 proxied + 3 replayed, each acknowledged at once
