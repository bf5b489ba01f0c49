#!/usr/bin/env python3
"""The gRPC contract's compatibility check (README "Compatibility").

proto/contract/v1.descriptor.binpb is the descriptor set of the last release's proto/ (a FileDescriptorSet,
`protoc --include_imports --descriptor_set_out`). `check` compiles today's proto/ the same way and fails when a
caller's stubs generated from the release would stop working against today's gateway, or a caller's code written
against them would stop compiling:

  - a message, enum or service removed;
  - a field removed, renumbered or renamed, its type or label (singular, repeated, explicit presence) changed,
    moved into or out of a oneof; a reserved field number or name used again, or released;
  - an enum value removed, renumbered or renamed;
  - an RPC removed, its request or response type changed, or its streaming kind;
  - a file's package or generated-code package (go_package, java_package, java_multiple_files) changed.

Additions (messages, fields, enum values, RPCs, services) pass. `freeze` writes the baseline from today's proto/:
run it when a release is cut (`make freeze-contract`), never to make `check` pass.

Usage:
  scripts/contract.py check  [--proto-dir proto] [--baseline proto/contract/v1.descriptor.binpb]
  scripts/contract.py freeze [--proto-dir proto] [--baseline proto/contract/v1.descriptor.binpb]
  scripts/contract.py compare OLD.binpb NEW.binpb
"""
import argparse
import os
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
DEFAULT_BASELINE = os.path.join(ROOT, "proto", "contract", "v1.descriptor.binpb")
DEFAULT_PROTO_DIR = os.path.join(ROOT, "proto")
# Protobuf's own well-known types come from whichever protoc compiled the set: not part of our contract.
FOREIGN_PREFIX = "google/protobuf/"
FILE_OPTIONS = ("go_package", "java_package", "java_multiple_files")


def _descriptor_pb2():
    try:
        from google.protobuf import descriptor_pb2
    except ImportError:
        sys.exit("contract: the Python 'protobuf' package is missing: run 'make venv' (or use .venv/bin/python)")
    return descriptor_pb2


def compile_protos(proto_dir):
    """The FileDescriptorSet of every .proto under `proto_dir`, compiled by grpcio-tools' protoc."""
    descriptor_pb2 = _descriptor_pb2()
    try:
        import grpc_tools
        from grpc_tools import protoc
    except ImportError:
        sys.exit("contract: grpcio-tools is missing: run 'make venv' (or use .venv/bin/python)")
    protos = []
    for base, _, files in os.walk(proto_dir):
        protos += [os.path.relpath(os.path.join(base, f), proto_dir) for f in files if f.endswith(".proto")]
    wkt = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "set.binpb")
        args = ["protoc", f"-I{proto_dir}", f"-I{wkt}", "--include_imports", f"--descriptor_set_out={out}"]
        if protoc.main(args + sorted(protos)) != 0:
            raise SystemExit(f"contract: protoc could not compile {proto_dir}")
        with open(out, "rb") as f:
            return descriptor_pb2.FileDescriptorSet.FromString(f.read())


def load(path):
    with open(path, "rb") as f:
        return _descriptor_pb2().FileDescriptorSet.FromString(f.read())


class Contract:
    """The named parts of a descriptor set, by fully qualified name."""

    def __init__(self, descriptor_set):
        self.files, self.messages, self.enums, self.services = {}, {}, {}, {}
        for file in descriptor_set.file:
            if file.name.startswith(FOREIGN_PREFIX):
                continue
            self.files[file.name] = file
            prefix = f".{file.package}" if file.package else ""
            for message in file.message_type:
                self._message(f"{prefix}.{message.name}", message)
            for enum in file.enum_type:
                self.enums[f"{prefix}.{enum.name}"] = enum
            for service in file.service:
                self.services[f"{prefix}.{service.name}"] = service

    def _message(self, name, message):
        self.messages[name] = message
        for nested in message.nested_type:
            self._message(f"{name}.{nested.name}", nested)
        for enum in message.enum_type:
            self.enums[f"{name}.{enum.name}"] = enum


def _label(field):
    """The field's cardinality as a caller's code sees it."""
    names = {1: "optional", 2: "required", 3: "repeated"}
    if field.label == 1:
        return "explicit presence (optional)" if field.proto3_optional else "singular"
    return names.get(field.label, str(field.label))


def _type(field):
    descriptor_pb2 = _descriptor_pb2()
    name = descriptor_pb2.FieldDescriptorProto.Type.Name(field.type).removeprefix("TYPE_").lower()
    return f"{name} {field.type_name.lstrip('.')}" if field.type_name else name


def _oneof(message, field):
    """The real oneof a field belongs to (not the synthetic one of a proto3 `optional`), or None."""
    if not field.HasField("oneof_index") or field.proto3_optional:
        return None
    return message.oneof_decl[field.oneof_index].name


def _reserved_numbers(message):
    return [(r.start, r.end) for r in message.reserved_range]  # end exclusive


def _is_reserved(number, ranges):
    return any(start <= number < end for start, end in ranges)


def _covered(start, end, ranges):
    """Whether every number in [start, end) lies in one of `ranges` (each [start, end))."""
    for low, high in sorted(ranges):
        if low <= start < high:
            start = high
        if start >= end:
            return True
    return start >= end


def _compare_message(name, old, new, problems):
    new_by_number = {f.number: f for f in new.field}
    new_by_name = {f.name: f for f in new.field}
    for field in old.field:
        where = f"field {name.lstrip('.')}.{field.name} ({field.number})"
        now = new_by_number.get(field.number)
        if now is None:
            if field.name in new_by_name:
                problems.append(f"{where} renumbered to {new_by_name[field.name].number}")
            else:
                problems.append(f"{where} removed")
            continue
        if now.name != field.name:
            problems.append(f"{where} renamed to {now.name}")
        if _type(now) != _type(field):
            problems.append(f"{where} type changed from {_type(field)} to {_type(now)}")
        if _label(now) != _label(field):
            problems.append(f"{where} label changed from {_label(field)} to {_label(now)}")
        if _oneof(new, now) != _oneof(old, field):
            problems.append(f"{where} oneof changed from {_oneof(old, field)} to {_oneof(new, now)}")
        if now.json_name != field.json_name and now.name == field.name:
            problems.append(f"{where} json_name changed from {field.json_name} to {now.json_name}")
    old_ranges, new_ranges = _reserved_numbers(old), _reserved_numbers(new)
    old_numbers = {f.number for f in old.field}
    for field in new.field:
        if field.number not in old_numbers and _is_reserved(field.number, old_ranges):
            problems.append(f"field {name.lstrip('.')}.{field.name} uses the reserved number {field.number}")
        if field.name in old.reserved_name:
            problems.append(f"field {name.lstrip('.')}.{field.name} uses a reserved name")
    for start, end in old_ranges:
        if not _covered(start, end, new_ranges):
            problems.append(f"message {name.lstrip('.')}: reserved numbers {start}-{end - 1} are no longer all "
                            "reserved")
    for reserved in old.reserved_name:
        if reserved not in new.reserved_name and reserved not in new_by_name:
            problems.append(f"message {name.lstrip('.')}: reserved name {reserved} is no longer reserved")


def _compare_enum(name, old, new, problems):
    new_by_name = {v.name: v for v in new.value}
    new_by_number = {}
    for value in new.value:
        new_by_number.setdefault(value.number, value)
    for value in old.value:
        where = f"enum value {name.lstrip('.')}.{value.name} ({value.number})"
        now = new_by_name.get(value.name)
        if now is None:
            if value.number in new_by_number:
                problems.append(f"{where} renamed to {new_by_number[value.number].name}")
            else:
                problems.append(f"{where} removed")
        elif now.number != value.number:
            problems.append(f"{where} renumbered to {now.number}")


def _compare_service(name, old, new, problems):
    new_methods = {m.name: m for m in new.method}
    for method in old.method:
        where = f"rpc {name.lstrip('.')}.{method.name}"
        now = new_methods.get(method.name)
        if now is None:
            problems.append(f"{where} removed")
            continue
        if now.input_type != method.input_type:
            problems.append(f"{where} request type changed from {method.input_type.lstrip('.')} to "
                            f"{now.input_type.lstrip('.')}")
        if now.output_type != method.output_type:
            problems.append(f"{where} response type changed from {method.output_type.lstrip('.')} to "
                            f"{now.output_type.lstrip('.')}")
        kinds = ("client_streaming", "server_streaming")
        was = [k for k in kinds if getattr(method, k)] or ["unary"]
        is_now = [k for k in kinds if getattr(now, k)] or ["unary"]
        if was != is_now:
            problems.append(f"{where} streaming kind changed from {'+'.join(was)} to {'+'.join(is_now)}")


def breaking_changes(old_set, new_set):
    """Every change from `old_set` to `new_set` that breaks the contract, as sentences."""
    old, new = Contract(old_set), Contract(new_set)
    problems = []
    for name, message in old.messages.items():
        if name not in new.messages:
            problems.append(f"message {name.lstrip('.')} removed")
        else:
            _compare_message(name, message, new.messages[name], problems)
    for name, enum in old.enums.items():
        if name not in new.enums:
            problems.append(f"enum {name.lstrip('.')} removed")
        else:
            _compare_enum(name, enum, new.enums[name], problems)
    for name, service in old.services.items():
        if name not in new.services:
            problems.append(f"service {name.lstrip('.')} removed")
        else:
            _compare_service(name, service, new.services[name], problems)
    for name, file in old.files.items():
        now = new.files.get(name)
        if now is None:
            continue  # its declarations were compared by name: a file may be split or renamed
        if now.package != file.package:
            problems.append(f"file {name}: package changed from {file.package} to {now.package}")
        for option in FILE_OPTIONS:
            if getattr(now.options, option) != getattr(file.options, option):
                problems.append(f"file {name}: option {option} changed from {getattr(file.options, option)!r} "
                                f"to {getattr(now.options, option)!r}")
    return problems


def additions(old_set, new_set):
    """How many messages, fields, enum values, RPCs and services `new_set` adds (for the report line)."""
    old, new = Contract(old_set), Contract(new_set)
    count = len(new.messages.keys() - old.messages.keys()) + len(new.services.keys() - old.services.keys())
    for name, message in new.messages.items():
        if name in old.messages:
            count += len({f.number for f in message.field} - {f.number for f in old.messages[name].field})
    for name, enum in new.enums.items():
        before = {v.name for v in old.enums[name].value} if name in old.enums else set()
        count += len({v.name for v in enum.value} - before)
    for name, service in new.services.items():
        if name in old.services:
            count += len({m.name for m in service.method} - {m.name for m in old.services[name].method})
    return count


def _shown(path):
    """`path` relative to the repository when it is inside it."""
    relative = os.path.relpath(os.path.abspath(path), ROOT)
    return path if relative.startswith("..") else relative


def report(old_set, new_set, baseline, current):
    problems = breaking_changes(old_set, new_set)
    if problems:
        print(f"contract: {_shown(current)} breaks the released contract ({_shown(baseline)}):",
              file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        print("Within appstore.gateway.v1 only additions are allowed (README \"Compatibility\"): add a field or an "
              "RPC instead, deprecate the old one, and keep its number.", file=sys.stderr)
        return 1
    print(f"contract: {_shown(current)} is compatible with {_shown(baseline)} "
          f"({additions(old_set, new_set)} additions)")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in ("check", "freeze"):
        p = sub.add_parser(command)
        p.add_argument("--proto-dir", default=DEFAULT_PROTO_DIR)
        p.add_argument("--baseline", default=DEFAULT_BASELINE)
    p = sub.add_parser("compare")
    p.add_argument("old")
    p.add_argument("new")
    args = parser.parse_args(argv)

    if args.command == "compare":
        return report(load(args.old), load(args.new), args.old, args.new)
    current = compile_protos(args.proto_dir)
    if args.command == "freeze":
        os.makedirs(os.path.dirname(args.baseline), exist_ok=True)
        with open(args.baseline, "wb") as f:
            f.write(current.SerializeToString(deterministic=True))
        print(f"contract: wrote {_shown(args.baseline)} from {_shown(args.proto_dir)}")
        return 0
    if not os.path.exists(args.baseline):
        print(f"contract: no baseline at {args.baseline}: run `make freeze-contract` at a release",
              file=sys.stderr)
        return 1
    return report(load(args.baseline), current, args.baseline, args.proto_dir)


if __name__ == "__main__":
    sys.exit(main())
