#!/usr/bin/python3
"""A TCP proxy on 127.0.0.1 that delays every byte by a fixed time each way.

    /usr/bin/python3 bench/ps/delay-proxy.py --target 127.0.0.1:PORT
        --delay-ms 1 --port-file FILE

Loopback answers in tens of microseconds; a PS service in a data centre
answers in a millisecond or more. The benchmarks put this proxy between a
worker and a server to see what the network's latency costs a training
step (and what pulling rows ahead saves): data read from either side is
written to the other --delay-ms later, in order, so a round trip takes
twice --delay-ms more. Listens on a free port, which it writes to
--port-file; runs until killed.
"""

import argparse
import asyncio
import os
import sys


async def pump(reader, writer, delay):
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()

    async def send():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.create_task(send())
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            queue.put_nowait((loop.time() + delay, data))
    except ConnectionError:
        pass
    queue.put_nowait((0, None))
    try:
        await sender
    except ConnectionError:
        pass


async def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True, help="HOST:PORT")
    parser.add_argument("--delay-ms", type=float, required=True)
    parser.add_argument("--port-file", required=True)
    args = parser.parse_args()
    host, port = args.target.rsplit(":", 1)
    if args.delay_ms < 0:
        parser.error("--delay-ms must not be negative")
    delay = args.delay_ms / 1000

    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(
                host, int(port))
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(
            pump(client_reader, server_writer, delay),
            pump(server_reader, client_writer, delay))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    listening = server.sockets[0].getsockname()[1]
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{listening}\n")
    os.rename(tmp, args.port_file)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
