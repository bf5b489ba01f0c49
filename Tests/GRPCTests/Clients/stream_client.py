"""Drives one server stream on an in-process gRPC server for GRPCTests (Python `h2`).

usage: stream_client.py PORT PATH MODE
  cancel  read the first message, then RST_STREAM(CANCEL) and wait a little
  stall   never acknowledge received data (the flow-control window stays closed) for 1.5 s, then close
  unary   read the answer to its end
Prints the number of DATA bytes received."""
import socket
import sys
import time

import h2.config
import h2.connection
import h2.events

port, path, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
sock = socket.create_connection(("127.0.0.1", port), timeout=5)
conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True))
conn.initiate_connection()
stream = conn.get_next_available_stream_id()
conn.send_headers(stream, [(":method", "POST"), (":scheme", "http"), (":authority", "x"), (":path", path),
                           ("content-type", "application/grpc"), ("te", "trailers")])
conn.send_data(stream, b"\x00\x00\x00\x00\x00", end_stream=True)
sock.sendall(conn.data_to_send())

received = 0
deadline = time.monotonic() + (1.5 if mode == "stall" else 5)
done = False
while not done and time.monotonic() < deadline:
    sock.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        data = sock.recv(65536)
    except socket.timeout:
        break
    if not data:
        break
    for event in conn.receive_data(data):
        if isinstance(event, h2.events.DataReceived):
            received += len(event.data)
            if mode == "cancel":
                conn.reset_stream(stream, error_code=8)
                done = True
        elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)):
            done = True
    out = conn.data_to_send()
    if out:
        sock.sendall(out)
if mode == "cancel":
    time.sleep(0.3)
print(received)
sock.close()
