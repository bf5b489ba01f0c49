#!/usr/bin/env python3
"""Writes Swift value types (Sources/ProtoCodec/Generated) for every message of a protoc-c FileDescriptorSet.

Run by scripts/gen-protos.sh with the venv's python:

    gen-swift-codec.py --descriptor-set FILE --c-dir Sources/CGatewayProtos --out Sources/ProtoCodec/Generated

It also writes a registry of protoc-c's message descriptors into --c-dir (message_registry.c and
include/message_registry.h), for the proto3 JSON encoder.

Each proto file becomes one Swift file: a `public struct` per message (Sendable, Hashable, proto3 defaults), a
Swift enum per proto enum (never fails a decode: `unrecognized(Int32)`), and the internal glue that copies a
protoc-c struct into Swift (decode) or builds one in an `Arena` (encode). The C names (struct type, function
prefix) are read from the protoc-c output in --c-dir, so the generator never re-implements protoc-c's mangling.
The output depends only on its inputs: no dates, no paths of the machine.
"""

import argparse
import base64
import json
import os
import re
import sys

from google.protobuf import descriptor_pb2

FDP = descriptor_pb2.FieldDescriptorProto

# Swift names of messages whose plain name would clash with the standard library, Foundation, or each other.
TYPE_NAME_OVERRIDES = {
    "google.protobuf.Timestamp": "ProtoTimestamp",
    "google.protobuf.Duration": "ProtoDuration",
    "google.protobuf.Any": "ProtoAny",
    "google.protobuf.BoolValue": "ProtoBoolValue",
    "google.protobuf.BytesValue": "ProtoBytesValue",
    "google.protobuf.DoubleValue": "ProtoDoubleValue",
    "google.protobuf.FloatValue": "ProtoFloatValue",
    "google.protobuf.Int32Value": "ProtoInt32Value",
    "google.protobuf.Int64Value": "ProtoInt64Value",
    "google.protobuf.StringValue": "ProtoStringValue",
    "google.protobuf.UInt32Value": "ProtoUInt32Value",
    "google.protobuf.UInt64Value": "ProtoUInt64Value",
    "google.rpc.Status": "GoogleRPCStatus",
    # Foundation.Notification and FoundationEssentials.SortOrder: a client importing Foundation too would have
    # to qualify every use.
    "appstore.gateway.v1.Notification": "AppStoreNotification",
    "appstore.gateway.v1.SortOrder": "HistorySortOrder",
}

# Swift case names that the mechanical UPPER_SNAKE -> lowerCamel rule would spell against Apple's own spelling.
CASE_NAME_OVERRIDES = {
    "ORIGINAL_PLATFORM_IOS": "iOS",
    "ORIGINAL_PLATFORM_MAC_OS": "macOS",
    "ORIGINAL_PLATFORM_TV_OS": "tvOS",
    "ORIGINAL_PLATFORM_VISION_OS": "visionOS",
}

SWIFT_KEYWORDS = {
    "associatedtype", "class", "deinit", "enum", "extension", "fileprivate", "func", "import", "init", "inout",
    "internal", "let", "open", "operator", "private", "precedencegroup", "protocol", "public", "rethrows",
    "static", "struct", "subscript", "typealias", "var", "break", "case", "catch", "continue", "default",
    "defer", "do", "else", "fallthrough", "for", "guard", "if", "in", "repeat", "return", "throw", "switch",
    "where", "while", "Any", "as", "await", "false", "is", "nil", "self", "Self", "super", "true", "try",
    "throws", "Type", "Protocol",
}

# protoc-c lowercases field names and appends "_" to C and C++ keywords (`default` -> `default_`).
C_KEYWORDS = set("""
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char class compl const constexpr
    const_cast continue decltype default delete do double dynamic_cast else enum explicit export extern false
    float for friend goto if inline int long mutable namespace new noexcept not not_eq nullptr operator or
    or_eq private protected public register reinterpret_cast return short signed sizeof static static_assert
    static_cast struct switch template this thread_local throw true try typedef typeid typename union unsigned
    using virtual void volatile wchar_t while xor xor_eq
""".split())


def c_field(name):
    lowered = name.lower()
    return lowered + "_" if lowered in C_KEYWORDS else lowered


SCALARS = {
    # proto type: (Swift type, default literal, kind) where kind says how the C value converts.
    FDP.TYPE_DOUBLE: ("Double", "0", "num"),
    FDP.TYPE_FLOAT: ("Float", "0", "num"),
    FDP.TYPE_INT64: ("Int64", "0", "num"),
    FDP.TYPE_UINT64: ("UInt64", "0", "num"),
    FDP.TYPE_INT32: ("Int32", "0", "num"),
    FDP.TYPE_FIXED64: ("UInt64", "0", "num"),
    FDP.TYPE_FIXED32: ("UInt32", "0", "num"),
    FDP.TYPE_UINT32: ("UInt32", "0", "num"),
    FDP.TYPE_SFIXED32: ("Int32", "0", "num"),
    FDP.TYPE_SFIXED64: ("Int64", "0", "num"),
    FDP.TYPE_SINT32: ("Int32", "0", "num"),
    FDP.TYPE_SINT64: ("Int64", "0", "num"),
    FDP.TYPE_BOOL: ("Bool", "false", "bool"),
    FDP.TYPE_STRING: ("String", '""', "string"),
    FDP.TYPE_BYTES: ("[UInt8]", "[]", "bytes"),
}


def fail(message):
    print(f"gen-swift-codec: {message}", file=sys.stderr)
    sys.exit(1)


def lower_camel(snake):
    parts = [p for p in snake.split("_") if p]
    if not parts:
        return snake
    head = parts[0] if not parts[0].isupper() else parts[0].lower()
    head = head[0].lower() + head[1:]
    return head + "".join(p[0].upper() + p[1:].lower() if p.isupper() else p[0].upper() + p[1:] for p in parts[1:])


def json_name(name):
    """protoc's default json_name (ToJsonName): every "_" removed and the letter after it capitalised."""
    out, upper = [], False
    for ch in name:
        if ch == "_":
            upper = True
        else:
            out.append(ch.upper() if upper else ch)
            upper = False
    return "".join(out)


def upper_camel(snake):
    name = lower_camel(snake)
    return name[0].upper() + name[1:]


def upper_snake(camel):
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", camel).upper()


def escape(name):
    return f"`{name}`" if name in SWIFT_KEYWORDS else name


def doc_lines(comment, indent):
    text = comment.strip("\n")
    if not text.strip():
        return []
    out = []
    for line in text.split("\n"):
        line = line[1:] if line.startswith(" ") else line
        out.append(f"{indent}///{' ' + line.rstrip() if line.strip() else ''}")
    return out


class CNames:
    """Full proto name -> (C struct type, C function prefix), read from protoc-c's descriptors."""

    PATTERN = re.compile(
        r"const ProtobufCMessageDescriptor (\w+)__descriptor =\s*\{\s*PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC,\s*"
        r'"([^"]+)",\s*"[^"]*",\s*"(\w+)"')

    def __init__(self, c_dir):
        self.names = {}
        for root, _, files in os.walk(c_dir):
            for f in sorted(files):
                if f.endswith(".pb-c.c"):
                    with open(os.path.join(root, f), encoding="utf-8") as h:
                        for prefix, full, c_type in self.PATTERN.findall(h.read()):
                            self.names[full] = (c_type, prefix)

    def __getitem__(self, full_name):
        if full_name not in self.names:
            fail(f"no protoc-c descriptor for {full_name}: run protoc-c first")
        return self.names[full_name]


class Model:
    """Every message and enum of the descriptor set, with its Swift name."""

    def __init__(self, fds):
        self.messages = {}  # ".pkg.Name" -> (DescriptorProto, swift name, file)
        self.enums = {}  # ".pkg.Name" -> (EnumDescriptorProto, swift name, file)
        top_level = {}
        for f in fds.file:
            pkg = f".{f.package}" if f.package else ""
            for m in f.message_type:
                self._add_message(m, pkg, None, f, top_level)
            for e in f.enum_type:
                self._add_enum(e, pkg, None, f, top_level)

    def _claim(self, top_level, swift, full):
        if swift in top_level:
            fail(f"Swift name {swift} of {full} collides with {top_level[swift]}: add a TYPE_NAME_OVERRIDES entry")
        top_level[swift] = full

    def _add_message(self, m, scope, parent_swift, f, top_level):
        full = f"{scope}.{m.name}"
        if m.options.map_entry:
            self.messages[full] = (m, None, f)
            for n in m.nested_type:
                self._add_message(n, full, None, f, top_level)
            return
        if parent_swift is not None:
            fail(f"{full}: nested messages are not supported (protoc-c has no unpack function for them); "
                 "declare it at file level")
        swift = TYPE_NAME_OVERRIDES.get(full[1:], m.name)
        self._claim(top_level, swift, full)
        self.messages[full] = (m, swift, f)
        for n in m.nested_type:
            self._add_message(n, full, swift, f, top_level)
        for e in m.enum_type:
            self._add_enum(e, full, swift, f, top_level)

    def _add_enum(self, e, scope, parent_swift, f, top_level):
        full = f"{scope}.{e.name}"
        swift = TYPE_NAME_OVERRIDES.get(full[1:], e.name)
        if parent_swift is None:
            self._claim(top_level, swift, full)
        else:
            swift = f"{parent_swift}.{swift}"
        self.enums[full] = (e, swift, f)


class FileWriter:
    def __init__(self, model, cnames, file_proto):
        self.model = model
        self.cnames = cnames
        self.file = file_proto
        self.comments = {}
        for loc in file_proto.source_code_info.location:
            if loc.leading_comments:
                self.comments[tuple(loc.path)] = loc.leading_comments
        self.lines = []

    def emit(self, line=""):
        self.lines.append(line)

    def doc(self, path, indent, fallback):
        lines = doc_lines(self.comments.get(tuple(path), ""), indent)
        self.lines.extend(lines or [f"{indent}/// {fallback}"])

    # MARK: field helpers

    def field_info(self, field):
        """(Swift type of one element, default, kind) of a field; kind in num/bool/string/bytes/enum/message."""
        if field.type == FDP.TYPE_ENUM:
            _, swift, _ = self.model.enums[field.type_name]
            return swift, f"{swift}(rawValue: 0)", "enum"
        if field.type == FDP.TYPE_MESSAGE:
            _, swift, _ = self.model.messages[field.type_name]
            return swift, "nil", "message"
        if field.type == FDP.TYPE_GROUP:
            fail(f"{field.name}: groups are not supported")
        return SCALARS[field.type]

    def map_entry(self, field):
        if field.type != FDP.TYPE_MESSAGE or field.label != FDP.LABEL_REPEATED:
            return None
        entry, _, _ = self.model.messages[field.type_name]
        if not entry.options.map_entry:
            return None
        key = next(f for f in entry.field if f.number == 1)
        value = next(f for f in entry.field if f.number == 2)
        return entry, key, value

    def swift_type(self, field):
        entry = self.map_entry(field)
        if entry:
            _, key, value = entry
            return f"[{self.field_info(key)[0]}: {self.field_info(value)[0]}]", "[:]"
        swift, default, kind = self.field_info(field)
        if field.label == FDP.LABEL_REPEATED:
            return f"[{swift}]", "[]"
        if kind == "message":
            return f"{swift}?", "nil"
        return swift, default

    def from_c(self, field, expr):
        """Swift expression converting the C value `expr` of one (non-repeated) field element."""
        swift, _, kind = self.field_info(field)
        if kind == "num":
            return expr
        if kind == "bool":
            return f"{expr} != 0"
        if kind == "string":
            return f"cString({expr})"
        if kind == "bytes":
            return f"cBytes({expr})"
        if kind == "enum":
            return f"{swift}(rawValue: Int32(truncatingIfNeeded: {expr}.rawValue))"
        return f"{swift}(c: {expr})"

    def to_c(self, field, expr):
        """C value (built in `arena`) of the Swift value `expr` of one field element."""
        _, _, kind = self.field_info(field)
        if kind == "num":
            return expr
        if kind == "bool":
            return f"{expr} ? 1 : 0"
        if kind == "string":
            return f"arena.string({expr})"
        if kind == "bytes":
            return f"arena.bytes({expr})"
        if kind == "enum":
            return f".init(rawValue: .init(truncatingIfNeeded: {expr}.rawValue))"
        return f"{expr}.cMessage(in: arena)"

    # MARK: enums

    def write_enum(self, e, swift, path, indent):
        name = swift.split(".")[-1]
        prefix = upper_snake(e.name) + "_"
        cases = []
        seen = set()
        for i, v in enumerate(e.value):
            bare = v.name[len(prefix):] if v.name.startswith(prefix) and len(v.name) > len(prefix) else v.name
            case = CASE_NAME_OVERRIDES.get(v.name) or lower_camel(bare.lower())
            if case[0].isdigit():
                case = "_" + case
            if case == "unrecognized":
                case = "unrecognized_"
            if v.number in seen:  # allow_alias: the first name wins.
                continue
            seen.add(v.number)
            cases.append((case, v.number, path + [2, i], v.name))
        self.doc(path, indent, f"The proto enum {e.name}.")
        self.emit(f"{indent}public enum {name}: RawRepresentable, CaseIterable, Sendable, Hashable {{")
        inner = indent + "    "
        for case, number, vpath, proto_name in cases:
            self.doc(vpath, inner, f"{proto_name} = {number}.")
            self.emit(f"{inner}case {escape(case)}")
        self.emit(f"{inner}/// A value this release does not know (a newer peer, or Apple added one); keeps its number.")
        self.emit(f"{inner}case unrecognized(Int32)")
        self.emit()
        self.emit(f"{inner}/// Every known case, in proto order.")
        self.emit(f"{inner}public static let allCases: [{name}] = [{', '.join('.' + escape(c) for c, *_ in cases)}]")
        self.emit()
        self.emit(f"{inner}/// The case of a proto number; unknown numbers become `.unrecognized`.")
        self.emit(f"{inner}public init(rawValue: Int32) {{")
        self.emit(f"{inner}    switch rawValue {{")
        for case, number, *_ in cases:
            self.emit(f"{inner}    case {number}: self = .{escape(case)}")
        self.emit(f"{inner}    default: self = .unrecognized(rawValue)")
        self.emit(f"{inner}    }}")
        self.emit(f"{inner}}}")
        self.emit()
        self.emit(f"{inner}/// The proto number.")
        self.emit(f"{inner}public var rawValue: Int32 {{")
        self.emit(f"{inner}    switch self {{")
        for case, number, *_ in cases:
            self.emit(f"{inner}    case .{escape(case)}: {number}")
        self.emit(f"{inner}    case .unrecognized(let value): value")
        self.emit(f"{inner}    }}")
        self.emit(f"{inner}}}")
        self.emit()
        self.emit(f"{inner}/// Equal when the proto numbers are: `.unrecognized(n)` equals the known case of n.")
        self.emit(f"{inner}public static func == (lhs: {name}, rhs: {name}) -> Bool {{ lhs.rawValue == rhs.rawValue }}")
        self.emit()
        self.emit(f"{inner}/// Hashes the proto number.")
        self.emit(f"{inner}public func hash(into hasher: inout Hasher) {{ hasher.combine(rawValue) }}")
        self.emit(f"{indent}}}")

    # MARK: messages

    def write_message(self, m, full, swift, path):
        c_type, c_prefix = self.cnames[full[1:]]
        oneofs = [o.name for o in m.oneof_decl]
        plain = [(i, f) for i, f in enumerate(m.field) if not f.HasField("oneof_index")]
        members = {}  # oneof index -> [(i, field)]
        for i, f in enumerate(m.field):
            if f.HasField("oneof_index"):
                members.setdefault(f.oneof_index, []).append((i, f))
        if any(f.proto3_optional for f in m.field):
            fail(f"{full}: proto3 optional is not supported by protoc-c 1.4.1")

        self.doc(path, "", f"The proto message {full[1:]}.")
        # A top-level `string app` field: the message names an app, and per-app authorization applies to it.
        names_app = any(f.name == "app" and f.type == 9 and f.label != 3 for _, f in plain)
        self.emit(f"public struct {swift}: ProtoMessage{', AppNamingMessage' if names_app else ''} {{")
        for i, f in plain:
            t, default = self.swift_type(f)
            self.doc(path + [2, i], "    ", f"Proto field {f.name} = {f.number}.")
            self.emit(f"    public var {escape(lower_camel(f.name))}: {t} = {default}")
        for o, name in enumerate(oneofs):
            self.emit(f"    /// The oneof `{name}`: at most one case is set; nil when none is.")
            self.emit(f"    public var {escape(lower_camel(name))}: {upper_camel(name)}? = nil")
        self.emit()
        self.emit(f'    /// The fully qualified proto name, as in `google.protobuf.Any` type URLs.')
        self.emit(f'    public static let protoMessageName = "{full[1:]}"')
        self.emit()
        # Every message answers it itself (no default to inherit by mistake): the authorization reads it.
        if names_app:
            self.emit("    /// The app this request names (`app`): per-app authorization applies to it.")
            self.emit("    public var namedApp: String? { app }")
        else:
            self.emit("    /// Nil: this message names no app.")
            self.emit("    public var namedApp: String? { nil }")
        self.emit()
        self.emit("    /// A message with every field at its proto3 default.")
        self.emit("    public init() {}")
        params = [(lower_camel(f.name), *self.swift_type(f)) for _, f in plain]
        params += [(lower_camel(n), f"{upper_camel(n)}?", "nil") for n in oneofs]
        if params:
            self.emit()
            self.emit("    /// A message with the given fields; the others keep their proto3 defaults.")
            # Inlinable: the caller builds the message in place, so a large field (a decoded payload) moves
            # in instead of being copied with every reference it holds retained and released again.
            self.emit("    @inlinable")
            self.emit("    public init(")
            for k, (n, t, d) in enumerate(params):
                self.emit(f"        {n}: {t} = {d}{',' if k < len(params) - 1 else ''}")
            self.emit("    ) {")
            for n, _, _ in params:
                self.emit(f"        self.{escape(n)} = {escape(n)}")
            self.emit("    }")
        for o, name in enumerate(oneofs):
            self.emit()
            self.emit(f"    /// The cases of the oneof `{name}`.")
            self.emit(f"    public enum {upper_camel(name)}: Sendable, Hashable {{")
            for i, f in members.get(o, []):
                self.doc(path + [2, i], "        ", f"Proto field {f.name} = {f.number}.")
                # A message case is boxed: the enclosing message stays small, so handing a large decoded
                # payload around costs a reference count, not a copy of every field it holds.
                boxed = "indirect " if self.field_info(f)[2] == "message" else ""
                self.emit(f"        {boxed}case {escape(lower_camel(f.name))}({self.field_info(f)[0]})")
            self.emit("    }")
        self.emit()
        # The ProtoMessage entry points: thin wrappers over Runtime/MessageCoding.swift.
        self.emit("    /// Decodes the protobuf wire format; throws `.malformed` when protobuf-c rejects the bytes.")
        self.emit("    public init(serializedBytes bytes: UnsafeRawBufferPointer) throws(ProtoDecodingError) {")
        self.emit(f"        self = try decodeMessage(bytes, unpack: {{ {c_prefix}__unpack(nil, $0, $1) }}, copy: {swift}.init(c:))")
        self.emit("    }")
        self.emit()
        self.emit("    /// The number of bytes `serialize(into:)` writes.")
        self.emit("    public func serializedSize() -> Int { packedSize(of: self) { $0.cMessage(in: $1) } }")
        self.emit()
        self.emit("    /// Writes the wire format at the start of `buffer`, which must hold `serializedSize()` bytes.")
        self.emit("    public func serialize(into buffer: UnsafeMutableRawBufferPointer) {")
        self.emit("        pack(self, into: buffer) { $0.cMessage(in: $1) }")
        self.emit("    }")
        self.emit()
        self.emit("    /// Appends the wire format to `buffer`, packing straight into its storage.")
        self.emit("    public func appendSerialized(to buffer: inout [UInt8]) {")
        self.emit("        packAppending(self, to: &buffer) { $0.cMessage(in: $1) }")
        self.emit("    }")
        self.emit("}")
        self.emit()

        # Decode: copy a protoc-c struct into Swift.
        self.emit(f"extension {swift} {{")
        self.emit("    /// Copies an unpacked protoc-c message; the caller keeps ownership of `c`.")
        self.emit(f"    init(c: UnsafePointer<{c_type}>) {{")
        self.emit("        self.init()")
        if m.field:
            self.emit("        let m = c.pointee")
        for _, f in plain:
            self.emit_decode_field(f, "        ")
        for o, name in enumerate(oneofs):
            self.emit(f"        switch Int(m.{upper_snake(name).lower()}_case.rawValue) {{")
            for _, f in members.get(o, []):
                case = escape(lower_camel(f.name))
                if self.field_info(f)[2] == "message":
                    self.emit(f"        case {f.number}: if let p = m.{c_field(f.name)} {{ self.{escape(lower_camel(name))} = .{case}({self.from_c(f, 'p')}) }}")
                else:
                    self.emit(f"        case {f.number}: self.{escape(lower_camel(name))} = .{case}({self.from_c(f, 'm.' + c_field(f.name))})")
            self.emit("        default: break")
            self.emit("        }")
        self.emit("    }")
        self.emit()

        # Encode: build the protoc-c struct in C memory owned by the arena.
        self.emit("    /// Builds the protoc-c message in memory owned by `arena` (valid while the arena lives).")
        self.emit(f"    func cMessage(in arena: Arena) -> UnsafeMutablePointer<{c_type}> {{")
        self.emit(f"        let c = arena.message(of: {c_type}.self) {{ {c_prefix}__init($0) }}")
        for _, f in plain:
            self.emit_encode_field(f, "        ")
        for o, name in enumerate(oneofs):
            self.emit(f"        switch self.{escape(lower_camel(name))} {{")
            for _, f in members.get(o, []):
                case = escape(lower_camel(f.name))
                self.emit(f"        case .{case}(let value)?:")
                self.emit(f"            c.pointee.{upper_snake(name).lower()}_case = .init(rawValue: {f.number})")
                self.emit(f"            c.pointee.{c_field(f.name)} = {self.to_c(f, 'value')}")
            self.emit("        case nil: break")
            self.emit("        }")
        self.emit("        return c")
        self.emit("    }")
        self.emit("}")

    def emit_decode_field(self, f, ind):
        prop = f"self.{escape(lower_camel(f.name))}"
        entry = self.map_entry(f)
        if entry:
            _, key, value = entry
            self.emit(f"{ind}{prop} = cMap(m.n_{c_field(f.name)}, m.{c_field(f.name)}) {{ "
                      f"({self.from_c(key, '$0.pointee.key')}, {self.from_c(value, '$0.pointee.value')}) }}")
            return
        swift, _, kind = self.field_info(f)
        if f.label == FDP.LABEL_REPEATED:
            if kind == "num":
                self.emit(f"{ind}{prop} = cArray(m.n_{c_field(f.name)}, m.{c_field(f.name)}) {{ $0 }}")
            elif kind == "message":
                self.emit(f"{ind}{prop} = cMessages(m.n_{c_field(f.name)}, m.{c_field(f.name)}) {{ {swift}(c: $0) }}")
            else:
                self.emit(f"{ind}{prop} = cArray(m.n_{c_field(f.name)}, m.{c_field(f.name)}) {{ {self.from_c(f, '$0')} }}")
            return
        if kind == "message":
            self.emit(f"{ind}if let p = m.{c_field(f.name)} {{ {prop} = {swift}(c: p) }}")
        else:
            self.emit(f"{ind}{prop} = {self.from_c(f, 'm.' + c_field(f.name))}")

    def emit_encode_field(self, f, ind):
        value = f"self.{escape(lower_camel(f.name))}"
        lhs = f"c.pointee.{c_field(f.name)}"
        count = f"c.pointee.n_{c_field(f.name)}"
        entry = self.map_entry(f)
        if entry:
            entry_msg, key, val = entry
            e_type, e_prefix = self.cnames[f.type_name[1:]]
            self.emit(f"{ind}({count}, {lhs}) = arena.messages({value}.sorted {{ $0.key < $1.key }}) {{ entry in")
            self.emit(f"{ind}    let e = arena.message(of: {e_type}.self) {{ {e_prefix}__init($0) }}")
            self.emit(f"{ind}    e.pointee.key = {self.to_c(key, 'entry.key')}")
            self.emit(f"{ind}    e.pointee.value = {self.to_c(val, 'entry.value')}")
            self.emit(f"{ind}    return e")
            self.emit(f"{ind}}}")
            return
        _, _, kind = self.field_info(f)
        if f.label == FDP.LABEL_REPEATED:
            if kind == "message":
                self.emit(f"{ind}({count}, {lhs}) = arena.messages({value}) {{ $0.cMessage(in: arena) }}")
            else:
                self.emit(f"{ind}({count}, {lhs}) = arena.array({value}) {{ {self.to_c(f, '$0')} }}")
            return
        if kind == "message":
            self.emit(f"{ind}if let value = {value} {{ {lhs} = value.cMessage(in: arena) }}")
        elif kind == "string":
            # Unset strings keep protoc-c's shared empty string (never freed, never packed).
            self.emit(f"{ind}if !{value}.isEmpty {{ {lhs} = arena.string({value}) }}")
        elif kind == "bytes":
            self.emit(f"{ind}if !{value}.isEmpty {{ {lhs} = arena.bytes({value}) }}")
        else:
            self.emit(f"{ind}{lhs} = {self.to_c(f, value)}")

    def render(self):
        f = self.file
        self.emit(f"// Generated by scripts/gen-swift-codec.py from {f.name}. Do not edit: run `make gen`.")
        self.emit("// swift-format-ignore-file")
        self.emit()
        self.emit("internal import CGatewayProtos")
        self.emit("internal import CProtobufC")
        pkg = f".{f.package}" if f.package else ""
        for i, e in enumerate(f.enum_type):
            self.emit()
            self.write_enum(e, self.model.enums[f"{pkg}.{e.name}"][1], [5, i], "")
        for i, m in enumerate(f.message_type):
            full = f"{pkg}.{m.name}"
            swift = self.model.messages[full][1]
            self.emit()
            self.write_message(m, full, swift, [4, i])
            for j, e in enumerate(m.enum_type):
                self.emit()
                self.emit(f"extension {swift} {{")
                self.write_enum(e, self.model.enums[f"{full}.{e.name}"][1], [4, i, 4, j], "    ")
                self.emit("}")
        return "\n".join(self.lines).rstrip("\n") + "\n"


def write_descriptors(fds, path):
    """Every file's FileDescriptorProto (source info stripped) for gRPC server reflection."""
    lines = [
        "// Generated by scripts/gen-swift-codec.py. Do not edit: run `make gen`.",
        "// swift-format-ignore-file",
        "",
        "extension ProtoFileDescriptor {",
        "    /// Every proto file the gateway serves (its own, health, google.rpc and their imports), in dependency",
        "    /// order: what gRPC server reflection answers with.",
        "    public static let all: [ProtoFileDescriptor] = [",
    ]
    for f in fds.file:
        stripped = descriptor_pb2.FileDescriptorProto()
        stripped.CopyFrom(f)
        stripped.ClearField("source_code_info")
        pkg = f"{f.package}." if f.package else ""
        symbols = []

        def add_message(m, scope):
            symbols.append(f"{scope}{m.name}")
            for n in m.nested_type:
                add_message(n, f"{scope}{m.name}.")
            for e in m.enum_type:
                symbols.append(f"{scope}{m.name}.{e.name}")

        for m in f.message_type:
            add_message(m, pkg)
        for e in f.enum_type:
            symbols.append(f"{pkg}{e.name}")
        for service in f.service:
            symbols.append(f"{pkg}{service.name}")
            symbols.extend(f"{pkg}{service.name}.{method.name}" for method in service.method)
        encoded = base64.b64encode(stripped.SerializeToString(deterministic=True)).decode("ascii")
        chunks = [encoded[i:i + 100] for i in range(0, len(encoded), 100)]
        lines.append("        ProtoFileDescriptor(")
        lines.append(f'            name: "{f.name}",')
        lines.append(f"            dependencies: [{', '.join(json.dumps(d) for d in f.dependency)}],")
        lines.append(f"            symbols: [{', '.join(json.dumps(sym) for sym in symbols)}],")
        lines.append("            base64: \"\"\"")
        lines.extend(f"                {c}" for c in chunks)
        lines.append("                \"\"\"),")
    lines.append("    ]")
    lines.append("}")
    with open(path, "w", encoding="utf-8", newline="\n") as h:
        h.write("\n".join(lines) + "\n")


# Well-known types whose proto3 JSON form ProtoJSON (Runtime/ProtoJSON.swift) does not implement: a proto that
# imports one fails here instead of printing it as a plain message.
JSON_UNSUPPORTED = {
    "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue", "google.protobuf.NullValue",
    "google.protobuf.FieldMask",
}


def write_c_registry(model, cnames, c_dir):
    """Every message's protoc-c descriptor by full name, for ProtoJSON (Runtime/ProtoJSON.swift): the schema it
    walks, the type of a google.protobuf.Any's URL, and which messages are map entries (protobuf-c's descriptors
    do not say). Also checks what ProtoJSON derives at run time: each field's json_name is protoc's default."""
    for full in sorted(model.enums):
        if full[1:] in JSON_UNSUPPORTED:
            fail(f"{full[1:]} has a proto3 JSON form ProtoJSON does not implement")
    rows, headers = [], set()
    for full in sorted(model.messages):
        m, _, f = model.messages[full]
        if full[1:] in JSON_UNSUPPORTED:
            fail(f"{full[1:]} has a proto3 JSON form ProtoJSON does not implement")
        for field in m.field:
            if field.json_name != json_name(field.name):
                fail(f"{full[1:]}.{field.name}: a custom json_name is not supported (ProtoJSON derives it)")
        _, prefix = cnames[full[1:]]
        rows.append(f"    {{ &{prefix}__descriptor, {1 if m.options.map_entry else 0} }},  /* {full[1:]} */")
        headers.add(f.name[: -len(".proto")] + ".pb-c.h")
    header = [
        "/* Generated by scripts/gen-swift-codec.py. Do not edit: run `make gen`. */",
        "#ifndef GATEWAY_PROTOS_MESSAGE_REGISTRY_H",
        "#define GATEWAY_PROTOS_MESSAGE_REGISTRY_H",
        "#include <protobuf-c/protobuf-c.h>",
        "",
        "/* One message of proto/ or its imports. */",
        "typedef struct {",
        "    const ProtobufCMessageDescriptor *descriptor;",
        "    /* Non-zero for the entry message protoc makes for a map field (protobuf-c's descriptors do not say). */",
        "    protobuf_c_boolean map_entry;",
        "} GatewayProtosMessage;",
        "",
        "/* Every message, sorted by full name; `*count` receives their number. */",
        "const GatewayProtosMessage *gateway_protos_messages(size_t *count);",
        "#endif",
    ]
    source = [
        "/* Generated by scripts/gen-swift-codec.py. Do not edit: run `make gen`. */",
        '#include "message_registry.h"',
        *[f'#include "{h}"' for h in sorted(headers)],
        "",
        "static const GatewayProtosMessage messages[] = {",
        *rows,
        "};",
        "",
        "const GatewayProtosMessage *gateway_protos_messages(size_t *count)",
        "{",
        "    *count = sizeof messages / sizeof messages[0];",
        "    return messages;",
        "}",
    ]
    os.makedirs(os.path.join(c_dir, "include"), exist_ok=True)
    with open(os.path.join(c_dir, "include", "message_registry.h"), "w", encoding="utf-8", newline="\n") as h:
        h.write("\n".join(header) + "\n")
    with open(os.path.join(c_dir, "message_registry.c"), "w", encoding="utf-8", newline="\n") as h:
        h.write("\n".join(source) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--descriptor-set", required=True)
    parser.add_argument("--c-dir", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    fds = descriptor_pb2.FileDescriptorSet()
    with open(args.descriptor_set, "rb") as h:
        fds.ParseFromString(h.read())
    model = Model(fds)
    cnames = CNames(args.c_dir)
    os.makedirs(args.out, exist_ok=True)
    for f in sorted(fds.file, key=lambda f: f.name):
        if not f.message_type and not f.enum_type:
            continue
        name = f.name[: -len(".proto")].replace("/", "_") + ".pb.swift"
        with open(os.path.join(args.out, name), "w", encoding="utf-8", newline="\n") as h:
            h.write(FileWriter(model, cnames, f).render())
    write_descriptors(fds, os.path.join(args.out, "FileDescriptors.swift"))
    write_c_registry(model, cnames, args.c_dir)


if __name__ == "__main__":
    main()
