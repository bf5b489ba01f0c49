"""The grpcio peer of bench/transport-peers.sh: `grpc.health.v1.Health/Check` on 127.0.0.1:PORT (h2c, grpc.aio),
answering the encoded HealthCheckResponse{status: SERVING} (08 01) with raw bytes, as the other peers do.

  .venv/bin/python bench/peers/grpcio_server.py PORT
"""
import asyncio
import sys

import grpc

SERVING = b"\x08\x01"


async def check(request: bytes, context) -> bytes:
    return SERVING


async def main(port: int) -> None:
    server = grpc.aio.server()
    handler = grpc.method_handlers_generic_handler(
        "grpc.health.v1.Health", {"Check": grpc.unary_unary_rpc_method_handler(check)})
    server.add_generic_rpc_handlers((handler,))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print(f"grpcio peer listening on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 30162))
