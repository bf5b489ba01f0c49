"""Holds N idle HTTP/2 (h2c) connections to HOST:PORT for bench/scale.sh: each sends the client preface and an
empty SETTINGS, acknowledges the server's SETTINGS, then stays silent. Prints "ready N" once all are open,
then holds them HOLD seconds and closes them with RST (SO_LINGER 0), leaving no TIME_WAIT behind.

  python3 bench/idle_connections.py HOST PORT N HOLD
"""
import asyncio
import socket
import struct
import sys

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
SETTINGS_ACK = b"\x00\x00\x00\x04\x01\x00\x00\x00\x00"


async def open_one(host, port, writers):
    for attempt in range(20):          # a full accept queue resets a connect: try again a little later
        try:
            reader, writer = await asyncio.open_connection(host, port)
            break
        except ConnectionError:
            await asyncio.sleep(0.05 * (attempt + 1))
    else:
        raise ConnectionError(f"cannot connect to {host}:{port}")
    writer.write(PREFACE)
    await reader.read(1024)            # the server's SETTINGS (and perhaps more); nothing else comes while idle
    writer.write(SETTINGS_ACK)
    await writer.drain()
    writers.append(writer)


async def main(host, port, n, hold):
    writers = []
    for start in range(0, n, 200):     # in batches, within the listen backlog
        await asyncio.gather(*(open_one(host, port, writers) for _ in range(start, min(n, start + 200))))
    print(f"ready {len(writers)}", flush=True)
    await asyncio.sleep(hold)
    for writer in writers:
        writer.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])))
