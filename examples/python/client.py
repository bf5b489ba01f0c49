#!/usr/bin/env python3
"""A command-line client for appstore-gateway: health, VerifyJWS, GetHistory and StreamNotifications.

    python examples/python/client.py --target localhost:50051 health
    python examples/python/client.py --target localhost:50051 verify --jws-file signedTransaction.jws
    python examples/python/client.py --target localhost:50051 history --app example --transaction-id 2000000000000001
    python examples/python/client.py --target localhost:50051 notifications --app example \
        --start 2026-11-01T00:00:00Z --end 2026-11-08T00:00:00Z
    python examples/python/client.py --target localhost:50051 all --jws-file t.jws --transaction-id 2000000000000001
    python examples/python/client.py --target gw:50051 --token-file /var/run/secrets/appstore-gateway/token \
        --ca-file ca.pem history --app example --transaction-id 2000000000000001

Caller identity (a gateway with `callers`): `--token-file` sends `authorization: Bearer <file content>` on every
call, re-reading the file each time (a projected service-account token is rotated by the kubelet);
`--ca-file` connects over TLS trusting that CA, `--cert-file`/`--key-file` add a client certificate.

Stubs: imported when `appstore.gateway.v1` is importable (see README.md to generate them once), otherwise
generated at start from the repository's proto/ into a temporary folder. Health stubs come from the
grpcio-health-checking package. Exit status: 0 when every call returned gRPC OK (a JWS that fails verification
is still an OK call with a failing verdict), 2 when a call failed, 1 on bad usage.
"""
import argparse
import datetime
import os
import sys
import tempfile

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))
GATEWAY_SERVICE = "appstore.gateway.v1.AppStoreGateway"


def load_stubs(proto_dir):
    """Returns the gateway's pb2 modules, generating them from `proto_dir` when they are not importable."""
    try:
        from appstore.gateway.v1 import gateway_pb2_grpc  # noqa: F401  (generated beforehand)
    except ImportError:
        from grpc_tools import protoc
        import grpc_tools

        out = tempfile.mkdtemp(prefix="appstore-gateway-stubs-")
        well_known = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
        protos = []
        for sub in ("appstore", os.path.join("google", "rpc")):
            for base, _, files in os.walk(os.path.join(proto_dir, sub)):
                protos += [os.path.relpath(os.path.join(base, f), proto_dir) for f in files if f.endswith(".proto")]
        if not protos:
            sys.exit(f"no .proto files under {proto_dir}: pass --proto-dir")
        args = ["protoc", f"-I{proto_dir}", f"-I{well_known}", f"--python_out={out}", f"--grpc_python_out={out}"]
        if protoc.main(args + sorted(protos)) != 0:
            sys.exit("protoc failed to generate the stubs")
        sys.path.insert(0, out)
    from appstore.gateway.v1 import gateway_pb2_grpc, history_pb2, notification_pb2, verify_pb2, common_pb2
    return gateway_pb2_grpc, history_pb2, notification_pb2, verify_pb2, common_pb2


def timestamp(text):
    """RFC 3339 (`2026-11-01T00:00:00Z`) to a google.protobuf.Timestamp."""
    from google.protobuf.timestamp_pb2 import Timestamp

    moment = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    result = Timestamp()
    result.FromDatetime(moment.astimezone(datetime.timezone.utc))
    return result


def enum_name(enum_type, value):
    try:
        return enum_type.Name(value)
    except ValueError:
        return str(value)


def print_rpc_error(method, error):
    """Prints the status, the message and the rich details (google.rpc.Status in grpc-status-details-bin)."""
    print(f"{method}: RPC error {error.code().name}: {error.details()}")
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            try:
                from google.rpc import error_details_pb2, status_pb2

                status = status_pb2.Status.FromString(value)
                for detail in status.details:
                    for kind in (error_details_pb2.ErrorInfo, error_details_pb2.RetryInfo,
                                 error_details_pb2.QuotaFailure):
                        if detail.Is(kind.DESCRIPTOR):
                            message = kind()
                            detail.Unpack(message)
                            text = str(message).strip().replace("\n", ", ")
                            print(f"  {kind.DESCRIPTOR.name}: {text}")
            except Exception as problem:  # details are a courtesy: never hide the status itself
                print(f"  (undecodable status details: {problem})")
        elif key == "grpc-retry-pushback-ms":
            print(f"  retry after: {value} ms")


def check_health(channel, timeout):
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    stub = health_pb2_grpc.HealthStub(channel)
    ok = True
    for service in ("", GATEWAY_SERVICE):
        try:
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
            print(f'health "{service}": {health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)}')
        except grpc.RpcError as error:
            print_rpc_error(f'health "{service}"', error)
            ok = False
    return ok


def verify(stubs, channel, args):
    gateway_pb2_grpc, _, _, verify_pb2, common_pb2 = stubs
    if args.jws_file:
        with open(args.jws_file) as f:
            jws = f.read().strip()
    else:
        jws = args.jws
    if not jws:
        sys.exit("verify needs --jws or --jws-file")
    # Bound to an app (and, when given, an environment): the gateway refuses an unbound call unless it is
    # configured with exactly one app or verification.allowUnboundVerification.
    request = verify_pb2.VerifyJWSRequest(jws=jws, app=args.app or "")
    if args.kind:
        request.kind = verify_pb2.JWSKind.Value(f"JWS_KIND_{args.kind.upper()}")
    if args.environment:
        request.environment = common_pb2.Environment.Value(f"ENVIRONMENT_{args.environment.upper()}")
    try:
        reply = gateway_pb2_grpc.AppStoreGatewayStub(channel).VerifyJWS(request, timeout=args.timeout)
    except grpc.RpcError as error:
        print_rpc_error("VerifyJWS", error)
        return False
    status = enum_name(verify_pb2.VerificationStatus, reply.status)
    kind = enum_name(verify_pb2.JWSKind, reply.kind)
    environment = enum_name(common_pb2.Environment, reply.environment)
    print(f"VerifyJWS: status={status} kind={kind} environment={environment}"
          + (f" message={reply.message!r}" if reply.message else ""))
    payload = reply.WhichOneof("payload")
    if payload:
        decoded = getattr(reply, payload)
        print(f"  {payload}: {getattr(decoded, 'raw_json', '') or str(decoded).strip()}")
    if reply.status != verify_pb2.VERIFICATION_STATUS_OK:
        print("  (do not trust this payload)")
    return True


def history(stubs, channel, args):
    gateway_pb2_grpc, history_pb2, _, _, _ = stubs
    if not args.transaction_id:
        sys.exit("history needs --transaction-id")
    request = history_pb2.GetHistoryRequest(
        app=args.app or "", transaction_id=args.transaction_id, all_pages=args.all_pages)
    try:
        reply = gateway_pb2_grpc.AppStoreGatewayStub(channel).GetHistory(request, timeout=args.timeout)
    except grpc.RpcError as error:
        print_rpc_error("GetHistory", error)
        return False
    print(f"GetHistory: bundle_id={reply.bundle_id} transactions={len(reply.signed_transactions)} "
          f"pages={reply.pages_fetched} has_more={reply.has_more} revision={reply.revision!r}")
    for transaction in reply.transactions:
        print(f"  {transaction.transaction_id} {transaction.product_id}")
    return True


def notifications(stubs, channel, args):
    gateway_pb2_grpc, _, notification_pb2, _, _ = stubs
    if not (args.start and args.end):
        sys.exit("notifications needs --start and --end")
    request = notification_pb2.StreamNotificationsRequest(
        app=args.app or "", start_date=timestamp(args.start), end_date=timestamp(args.end),
        resume_token=args.resume_token or "")
    count = 0
    last_token = ""
    try:
        for event in gateway_pb2_grpc.AppStoreGatewayStub(channel).StreamNotifications(request, timeout=args.timeout):
            count += 1
            last_token = event.resume_token
            n = event.notification
            print(f"  {n.notification_uuid} {n.notification_type_raw}/{n.subtype_raw} attempts={len(event.send_attempts)}")
    except grpc.RpcError as error:
        print_rpc_error("StreamNotifications", error)
        if last_token:
            print(f"  resume with --resume-token {last_token}")
        return False
    print(f"StreamNotifications: {count} events" + (f", last resume token {last_token}" if last_token else ""))
    return True


class BearerToken(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor):
    """Adds `authorization: Bearer <token>` to every call, reading the token file each time (the kubelet
    rewrites a projected service-account token before it expires)."""

    def __init__(self, path):
        self.path = path

    def _with_token(self, details):
        with open(self.path) as f:
            token = f.read().strip()
        metadata = [m for m in (details.metadata or ()) if m[0] != "authorization"]
        metadata.append(("authorization", "Bearer " + token))
        return _Details(details, metadata)

    def intercept_unary_unary(self, continuation, details, request):
        return continuation(self._with_token(details), request)

    def intercept_unary_stream(self, continuation, details, request):
        return continuation(self._with_token(details), request)


class _Details(grpc.ClientCallDetails):
    def __init__(self, details, metadata):
        self.method, self.timeout, self.metadata = details.method, details.timeout, metadata
        self.credentials = details.credentials
        self.wait_for_ready = getattr(details, "wait_for_ready", None)
        self.compression = getattr(details, "compression", None)


def open_channel(args):
    """h2c, or TLS with --ca-file (and a client certificate with --cert-file/--key-file)."""
    if args.ca_file:
        def read(path):
            with open(path, "rb") as f:
                return f.read()
        credentials = grpc.ssl_channel_credentials(
            root_certificates=read(args.ca_file),
            private_key=read(args.key_file) if args.key_file else None,
            certificate_chain=read(args.cert_file) if args.cert_file else None)
        channel = grpc.secure_channel(args.target, credentials)
    else:
        channel = grpc.insecure_channel(args.target)
    if args.token_file:
        channel = grpc.intercept_channel(channel, BearerToken(args.token_file))
    return channel


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="localhost:50051", help="HOST:PORT of the gateway (h2c)")
    parser.add_argument("--timeout", type=float, default=30, help="deadline per call, seconds")
    parser.add_argument("--proto-dir", default=DEFAULT_PROTO_DIR, help="proto/ to generate stubs from")
    parser.add_argument("--app", help="configured app name or bundle id")
    parser.add_argument("--token-file", help="send its content as `authorization: Bearer` (re-read per call)")
    parser.add_argument("--ca-file", help="connect over TLS, trusting this PEM CA")
    parser.add_argument("--cert-file", help="with --ca-file: a PEM client certificate (mutual TLS)")
    parser.add_argument("--key-file", help="with --ca-file: the client certificate's PEM key")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("health", help="grpc.health.v1 Check of the server and the gateway service")
    for name in ("verify", "all"):
        command = commands.add_parser(name, help="VerifyJWS" if name == "verify" else "health and all three RPCs")
        command.add_argument("--jws", help="the compact JWS")
        command.add_argument("--jws-file", help="a file holding the compact JWS")
        command.add_argument("--kind", choices=["transaction", "renewal_info", "notification", "app_transaction"])
        command.add_argument("--environment", choices=["production", "sandbox", "xcode", "local_testing"])
    for name in ("history", "all"):
        command = commands.choices.get(name) or commands.add_parser(name, help="GetHistory")
        command.add_argument("--transaction-id", help="any transaction id of the customer")
        command.add_argument("--all-pages", action="store_true", help="follow revisions until has_more is false")
    for name in ("notifications", "all"):
        command = commands.choices.get(name) or commands.add_parser(name, help="StreamNotifications")
        command.add_argument("--start", help="RFC 3339 start, e.g. 2026-11-01T00:00:00Z")
        command.add_argument("--end", help="RFC 3339 end")
        command.add_argument("--resume-token", help="continue after this event")
    # `--app` is accepted before or after the subcommand (`client.py --app x history` or `... history --app x`).
    for command in commands.choices.values():
        command.add_argument("--app", default=argparse.SUPPRESS, help="configured app name or bundle id")
    args = parser.parse_args(argv)

    stubs = load_stubs(args.proto_dir)
    with open_channel(args) as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=min(args.timeout, 10))
        except grpc.FutureTimeoutError:
            print(f"cannot connect to {args.target}")
            return 2
        ok = True
        if args.command in ("health", "all"):
            ok &= check_health(channel, args.timeout)
        if args.command == "verify" or (args.command == "all" and (args.jws or args.jws_file)):
            ok &= verify(stubs, channel, args)
        if args.command == "history" or (args.command == "all" and args.transaction_id):
            ok &= history(stubs, channel, args)
        if args.command == "notifications" or (args.command == "all" and args.start and args.end):
            ok &= notifications(stubs, channel, args)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
