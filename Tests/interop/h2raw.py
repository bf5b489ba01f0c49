"""A minimal raw HTTP/2 client (Python `h2`) for what grpcio will not send: wrong content types,
chosen grpc-timeout headers, resets at chosen moments."""
import socket

import h2.config
import h2.connection
import h2.events


class RawClient:
    def __init__(self, port, host="127.0.0.1", timeout=5.0, tls=None):
        """`tls`: an ssl.SSLContext to speak h2 over TLS (ALPN h2) instead of h2c."""
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.scheme = "http"
        if tls is not None:
            tls.set_alpn_protocols(["h2"])
            self.sock = tls.wrap_socket(self.sock, server_hostname="localhost")
            assert self.sock.selected_alpn_protocol() == "h2", self.sock.selected_alpn_protocol()
            self.scheme = "https"
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=True, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.flush()
        self.events = []

    def flush(self):
        data = self.conn.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, path, headers=None, body=b"", end_stream=True, content_type="application/grpc"):
        stream_id = self.conn.get_next_available_stream_id()
        base = [(":method", "POST"), (":scheme", self.scheme), (":authority", "localhost"), (":path", path), ("te", "trailers")]
        if content_type is not None:
            base.append(("content-type", content_type))
        self.conn.send_headers(stream_id, base + list(headers or []), end_stream=(end_stream and not body))
        if body:
            self.conn.send_data(stream_id, body, end_stream=end_stream)
        self.flush()
        return stream_id

    def reset(self, stream_id, code=8):
        self.conn.reset_stream(stream_id, error_code=code)
        self.flush()

    def read_until(self, predicate, timeout=5.0):
        """Reads events until predicate(events) is true; returns all events seen."""
        import time

        deadline = time.monotonic() + timeout
        while not predicate(self.events):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"condition not met; events: {self.events}")
            self.sock.settimeout(remaining)
            data = self.sock.recv(65536)
            if not data:
                self.events.append("closed")
                break
            for event in self.conn.receive_data(data):
                self.events.append(event)
                if isinstance(event, h2.events.DataReceived):
                    self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            self.flush()
        return self.events

    def stream_ended(self, stream_id):
        return lambda events: any(
            isinstance(e, (h2.events.StreamEnded, h2.events.StreamReset)) and e.stream_id == stream_id for e in events
        ) or "closed" in events

    def headers_of(self, stream_id):
        """Every header block received on the stream, as dicts (response head, then trailers)."""
        blocks = []
        for e in self.events:
            if isinstance(e, (h2.events.ResponseReceived, h2.events.TrailersReceived)) and e.stream_id == stream_id:
                blocks.append({k: v for k, v in e.headers})
        return blocks

    def close(self):
        try:
            self.conn.close_connection()
            self.flush()
        except Exception:
            pass
        self.sock.close()


def grpc_frame(payload: bytes) -> bytes:
    return b"\x00" + len(payload).to_bytes(4, "big") + payload
