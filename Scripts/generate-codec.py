#!/usr/bin/env python3
"""Generates the frame codec of LongLinkWire from proto/longlink/v1/longlink.proto.

Compiles the schema into a FileDescriptorSet with grpc_tools.protoc, reads it with
google.protobuf.descriptor_pb2, and writes, for every message of the schema, its size, its
encoder and its field-by-field decoder:

    Sources/LongLinkWire/Generated/Frame+Encoding.generated.swift
    Sources/LongLinkWire/Generated/Frame+Decoding.generated.swift

The Swift types (Sources/LongLinkWire/Frame.swift), the public entry points (Frame+Encoding.swift,
Frame+Decoding.swift), the reader and writer primitives (Internal/) and the decoding limits stay
hand-written; the generated code only calls them. The output depends on the schema and this script
alone, so regenerating gives the same bytes (CI checks it with Scripts/check-codec.sh).

Usage: python3 Scripts/generate-codec.py [--output DIR]   (needs protobuf, grpcio-tools)
"""

import argparse
import os
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2

from longlink_schema import PROTO_FILE, PROTO_ROOT, ROOT

DEFAULT_OUTPUT = os.path.join(ROOT, "Sources", "LongLinkWire", "Generated")
COMMAND = "python3 Scripts/generate-codec.py"
PACKAGE = "longlink.v1"
# The message a connection carries; its `body` oneof becomes the cases of the `Frame` enum.
ROOT_MESSAGE = "Frame"
LINE_LENGTH = 120

# Each message of the schema and the Swift type that holds it, with the value decoding starts from
# (the message's proto3 defaults: `Hello` and `Welcome` default their version to 1 in Swift, so
# their empty value says 0). A message missing here stops the generator.
SWIFT_TYPES = {
    "Hello": ("Frame.Hello", "Frame.Hello(version: 0)"),
    "Welcome": ("Frame.Welcome", "Frame.Welcome(version: 0)"),
    "Request": ("Frame.Request", "Frame.Request()"),
    "Response": ("Frame.Response", "Frame.Response()"),
    "Status": ("Frame.Status", "Frame.Status()"),
    "Cancel": ("Frame.Cancel", "Frame.Cancel()"),
    "Push": ("Frame.Push", "Frame.Push()"),
    "Ack": ("Frame.Ack", "Frame.Ack()"),
    "Sync": ("Frame.Sync", "Frame.Sync()"),
    "Ping": ("Frame.Ping", "Frame.Ping()"),
    "Pong": ("Frame.Pong", "Frame.Pong()"),
    "GoAway": ("Frame.GoAway", "Frame.GoAway()"),
}

# `uint32` fields held as a `StatusCode` rather than a `UInt32`.
STATUS_CODE_FIELDS = {("Status", "code"), ("GoAway", "code")}

FD = descriptor_pb2.FieldDescriptorProto


def swift_name(proto_name):
    """The Swift spelling of a field: lowerCamelCase, with `id` as `ID` and `ms` as `Milliseconds`
    (`client_id` is `clientID`, `retry_after_ms` is `retryAfterMilliseconds`)."""
    words = proto_name.split("_")
    spelled = [words[0]]
    for word in words[1:]:
        spelled.append({"id": "ID", "ms": "Milliseconds"}.get(word, word[:1].upper() + word[1:]))
    return "".join(spelled)


def descriptor_set():
    """The schema's FileDescriptorProto, compiled by grpc_tools.protoc."""
    with tempfile.TemporaryDirectory() as scratch:
        out = os.path.join(scratch, "longlink.pb")
        subprocess.run(
            [sys.executable, "-m", "grpc_tools.protoc", "-I", PROTO_ROOT, f"--descriptor_set_out={out}", PROTO_FILE],
            check=True,
        )
        files = descriptor_pb2.FileDescriptorSet()
        with open(out, "rb") as handle:
            files.ParseFromString(handle.read())
    (schema,) = files.file
    if schema.package != PACKAGE:
        sys.exit(f"generate-codec: the schema's package is {schema.package}, not {PACKAGE}")
    return schema


class Field:
    """One field of a message, with what the Swift code needs to size, write and read it."""

    def __init__(self, message, field, entries):
        self.number = field.number
        self.proto_name = field.name
        self.name = swift_name(field.name)
        repeated = field.label == FD.LABEL_REPEATED
        if field.type == FD.TYPE_MESSAGE and field.type_name in entries:
            key, value = entries[field.type_name]
            if (key, value) != (FD.TYPE_STRING, FD.TYPE_STRING):
                sys.exit(f"generate-codec: {message}.{field.name}: only map<string, string> is supported")
            self.kind = "stringMap"
        elif field.type == FD.TYPE_MESSAGE:
            if repeated:
                sys.exit(f"generate-codec: {message}.{field.name}: repeated messages are not supported")
            self.kind = "message"
            self.message = field.type_name.rsplit(".", 1)[-1]
        elif repeated:
            if field.type != FD.TYPE_UINT64:
                sys.exit(f"generate-codec: {message}.{field.name}: only repeated uint64 is supported")
            self.kind = "packedUInt64"
        elif (message, field.name) in STATUS_CODE_FIELDS:
            if field.type != FD.TYPE_UINT32:
                sys.exit(f"generate-codec: {message}.{field.name}: a status code is a uint32")
            self.kind = "statusCode"
        else:
            kinds = {
                FD.TYPE_UINT32: "uint32",
                FD.TYPE_UINT64: "uint64",
                FD.TYPE_BOOL: "bool",
                FD.TYPE_STRING: "string",
                FD.TYPE_BYTES: "bytes",
            }
            if field.type not in kinds:
                sys.exit(f"generate-codec: {message}.{field.name}: type {field.type} is not supported")
            self.kind = kinds[field.type]

    def size_term(self):
        """The expression of the field's encoded size (0 when it holds its default)."""
        return self.spell(0)

    def write_statement(self):
        """The statement that writes the field (nothing when it holds its default)."""
        return self.spell(1)

    def read_statement(self, path):
        """The statement that reads one occurrence of the field into the message being decoded."""
        return self.spell(2, path)

    def spell(self, column, path=""):
        return CODE[self.kind][column].format(n=self.number, name=self.name, path=path)


# For each kind of field, the Swift code of its size, its writing and its reading (of one occurrence),
# with {n} its number, {name} its Swift property and {path} its name in errors.
CODE = {
    "uint32": (
        "ProtobufWriter.varintFieldSize({n}, UInt64({name}))",
        "writer.writeUInt32Field({n}, {name})",
        '{name} = try reader.readUInt32Field(tag, field: "{path}")',
    ),
    "statusCode": (
        "ProtobufWriter.varintFieldSize({n}, UInt64({name}.rawValue))",
        "writer.writeUInt32Field({n}, {name}.rawValue)",
        '{name} = StatusCode(rawValue: try reader.readUInt32Field(tag, field: "{path}"))',
    ),
    "uint64": (
        "ProtobufWriter.varintFieldSize({n}, {name})",
        "writer.writeVarintField({n}, {name})",
        '{name} = try reader.readVarintField(tag, field: "{path}")',
    ),
    "bool": (
        "ProtobufWriter.varintFieldSize({n}, {name} ? 1 : 0)",
        "writer.writeBoolField({n}, {name})",
        '{name} = try reader.readBoolField(tag, field: "{path}")',
    ),
    "string": (
        "ProtobufWriter.stringFieldSize({n}, {name})",
        "writer.writeStringField({n}, {name})",
        '{name} = try reader.readStringField(tag, field: "{path}")',
    ),
    "bytes": (
        "ProtobufWriter.bytesFieldSize({n}, {name})",
        "writer.writeBytesField({n}, {name})",
        '{name} = try reader.readBytesField(tag, field: "{path}")',
    ),
    "stringMap": (
        "ProtobufWriter.stringMapFieldSize({n}, {name})",
        "writer.writeStringMapField({n}, {name})",
        'try reader.readStringMapEntry(tag, into: &{name}, bytes: &{name}Bytes, field: "{path}")',
    ),
    "packedUInt64": (
        "ProtobufWriter.packedUInt64FieldSize({n}, {name})",
        "writer.writePackedUInt64Field({n}, {name})",
        'try reader.readRepeatedUInt64Field(tag, into: &{name}, field: "{path}")',
    ),
}


class Message:
    """One message of the schema: its Swift type, its fields in field-number order and its path in
    errors (`Frame.response.status`: the fields that lead to it from `Frame`)."""

    def __init__(self, descriptor, prefix):
        self.proto_name = descriptor.name
        if descriptor.name not in SWIFT_TYPES:
            sys.exit(f"generate-codec: message {descriptor.name} has no Swift type in SWIFT_TYPES")
        self.swift_type, self.empty_value = SWIFT_TYPES[descriptor.name]
        entries = {}
        for nested in descriptor.nested_type:
            if not nested.options.map_entry:
                sys.exit(f"generate-codec: {descriptor.name}.{nested.name}: nested messages are not supported")
            key, value = sorted(nested.field, key=lambda field: field.number)
            entries[f"{prefix}.{descriptor.name}.{nested.name}"] = (key.type, value.type)
        self.fields = sorted(
            (Field(descriptor.name, field, entries) for field in descriptor.field), key=lambda field: field.number
        )
        self.path = None


def wrapped_case(number, statement, indent):
    """A `case` of a field switch on one line, or with its statement on the next when too long."""
    line = f"{indent}case {number}: {statement}"
    if len(line) <= LINE_LENGTH:
        return [line]
    line = f"{indent}    {statement}"
    if len(line) <= LINE_LENGTH:
        return [f"{indent}case {number}:", line]
    # Still too long: the call's arguments go on a line of their own.
    call, arguments = statement.split("(", 1)
    return [f"{indent}case {number}:", f"{indent}    {call}(", f"{indent}        {arguments}"]


def sum_lines(terms, indent):
    """`terms` added up, one term per line after the first."""
    return [f"{indent}{terms[0]}"] + [f"{indent}    + {term}" for term in terms[1:]]


HEADER = """\
// Generated from proto/longlink/v1/longlink.proto by Scripts/generate-codec.py. Do not edit:
// change the schema or the generator, then run `{command}` (CI fails when this
// file differs from what the generator writes).
"""


def frame_cases(frame):
    """The `body` oneof of `Frame`: (field number, Swift case name, field), by field number."""
    cases = []
    for field in frame.field:
        if not field.HasField("oneof_index") or field.type != FD.TYPE_MESSAGE:
            sys.exit(f"generate-codec: Frame.{field.name}: every Frame field is a message of its body oneof")
        cases.append((field.number, swift_name(field.name), field))
    return sorted(cases, key=lambda case: case[0])


def file_start():
    """The header, then the opening of the extension of `Frame` every generated file starts with."""
    return HEADER.format(command=COMMAND).splitlines() + ["", "extension Frame {"]


def encoding_file(cases, messages):
    lines = file_start()
    lines += [
        "    /// The number of the `body` field that is set and the size of its message, or nil for ``unrecognized``.",
        "    var bodyFieldNumberAndSize: (Int, Int)? {",
        "        switch self {",
    ]
    for number, case, _ in cases:
        lines.append(f"        case .{case}(let {case}): ({number}, {case}.wireSize)")
    lines += [
        "        case .unrecognized: nil",
        "        }",
        "    }",
        "",
        "    /// Writes the `body` field: it is present (even when its message is empty) because it is set.",
        "    func writeBody(_ fieldNumber: Int, _ bodySize: Int, to writer: inout ProtobufWriter) {",
        "        writer.writeDelimitedHeader(fieldNumber, length: bodySize)",
        "        switch self {",
    ]
    for _, case, _ in cases:
        lines.append(f"        case .{case}(let {case}): {case}.write(to: &writer)")
    lines += ["        case .unrecognized: break", "        }", "    }", "}"]
    for message in messages:
        lines += ["", f"extension {message.swift_type} {{"]
        lines += message_size(message)
        lines += [""]
        lines += message_write(message)
        lines.append("}")
    return lines


def message_size(message):
    """`wireSize`: the size of the message's encoding, proto3 defaults left out."""
    lines = ["    /// The size of the message's encoding, without a tag or length.", "    var wireSize: Int {"]
    if not message.fields:
        return lines + ["        0", "    }"]
    if not any(field.kind == "message" for field in message.fields):
        return lines + sum_lines([field.size_term() for field in message.fields], "        ") + ["    }"]
    lines.append("        var size = 0")
    for field in message.fields:
        if field.kind == "message":
            lines += [
                f"        if let {field.name} {{",
                "            // Present, it is written even when all its fields are defaults: presence is the signal.",
                f"            size += ProtobufWriter.delimitedFieldSize({field.number}, length: {field.name}.wireSize)",
                "        }",
            ]
        else:
            lines.append(f"        size += {field.size_term()}")
    return lines + ["        return size", "    }"]


def message_write(message):
    """`write(to:)`: appends the message's fields in field-number order."""
    lines = ["    /// Appends the message's fields (no tag or length) to `writer`.", "    func write(to writer: inout ProtobufWriter) {"]
    for field in message.fields:
        if field.kind == "message":
            lines += [
                f"        if let {field.name} {{",
                f"            writer.writeDelimitedHeader({field.number}, length: {field.name}.wireSize)",
                f"            {field.name}.write(to: &writer)",
                "        }",
            ]
        else:
            lines.append(f"        {field.write_statement()}")
    return lines + ["    }"]


def decoding_file(cases, messages):
    lines = file_start()
    lines += [
        "    /// Decodes the `Frame` message that fills the reader's region: a `body` field seen twice is",
        "    /// merged, a `body` field other than the one set so far replaces it (oneof: the last one wins).",
        "    init(reading reader: inout ProtobufReader) throws(WireFormatError) {",
        "        var frame = Frame.unrecognized",
        f'        while let tag = try reader.readTag(in: "{ROOT_MESSAGE}") {{',
        "            switch tag.fieldNumber {",
    ]
    by_name = {message.proto_name: message for message in messages}
    for number, case, field in cases:
        body = by_name[field.type_name.rsplit(".", 1)[-1]]
        lines += [
            f"            case {number}:",
            f'                var body = try reader.readMessageField(tag, field: "{ROOT_MESSAGE}.{field.name}")',
            f"                var {case} = if case .{case}(let existing) = frame {{ existing }} else {{ {body.empty_value} }}",
            f"                try {case}.merge(from: &body)",
            f"                frame = .{case}({case})",
        ]
    lines += [
        "            default:",
        f'                try reader.skipField(tag, in: "{ROOT_MESSAGE}")',
        "            }",
        "        }",
        "        self = frame",
        "    }",
        "}",
    ]
    for message in messages:
        lines += ["", f"extension {message.swift_type} {{"]
        lines += message_merge(message, by_name)
        lines.append("}")
    return lines


def message_merge(message, by_name):
    """`merge(from:)`: reads fields until the region ends, unknown ones skipped."""
    path = message.path
    lines = [
        "    /// Reads the message's fields from the reader's region into `self`: a scalar seen twice keeps",
        "    /// the last value, a message seen twice is merged, unknown fields are skipped.",
        "    mutating func merge(from reader: inout ProtobufReader) throws(WireFormatError) {",
    ]
    for field in message.fields:
        if field.kind == "stringMap":
            lines.append(f"        var {field.name}Bytes = 0")
    lines.append(f'        while let tag = try reader.readTag(in: "{path}") {{')
    if not message.fields:
        return lines + [f'            try reader.skipField(tag, in: "{path}")', "        }", "    }"]
    lines.append("            switch tag.fieldNumber {")
    for field in message.fields:
        field_path = f"{path}.{field.proto_name}"
        if field.kind == "message":
            nested = by_name[field.message]
            lines += [
                f"            case {field.number}:",
                f'                var body = try reader.readMessageField(tag, field: "{field_path}")',
                f"                var merged = {field.name} ?? {nested.empty_value}",
                "                try merged.merge(from: &body)",
                f"                {field.name} = merged",
            ]
        else:
            lines += wrapped_case(field.number, field.read_statement(field_path), "            ")
    lines += [f'            default: try reader.skipField(tag, in: "{path}")', "            }", "        }", "    }"]
    return lines


def assign_paths(messages, cases):
    """Names each message by the fields that lead to it from `Frame`; a message reached two ways
    would need its path passed in, which the generated code does not do, so it stops here."""
    by_name = {message.proto_name: message for message in messages}
    pending = [(by_name[field.type_name.rsplit(".", 1)[-1]], f"{ROOT_MESSAGE}.{field.name}") for _, _, field in cases]
    while pending:
        message, path = pending.pop(0)
        if message.path is not None:
            sys.exit(f"generate-codec: {message.proto_name} is reached as {message.path} and as {path}")
        message.path = path
        for field in message.fields:
            if field.kind == "message":
                pending.append((by_name[field.message], f"{path}.{field.proto_name}"))
    for message in messages:
        if message.path is None:
            sys.exit(f"generate-codec: {message.proto_name} is not reachable from {ROOT_MESSAGE}")


def main():
    parser = argparse.ArgumentParser(description="Generates LongLinkWire's frame codec from the schema.")
    parser.add_argument("--output", default=DEFAULT_OUTPUT, help="the directory to write into")
    arguments = parser.parse_args()

    schema = descriptor_set()
    prefix = f".{schema.package}"
    frame = next((message for message in schema.message_type if message.name == ROOT_MESSAGE), None)
    if frame is None:
        sys.exit(f"generate-codec: the schema has no {ROOT_MESSAGE} message")
    cases = frame_cases(frame)
    messages = [Message(message, prefix) for message in schema.message_type if message.name != ROOT_MESSAGE]
    assign_paths(messages, cases)

    os.makedirs(arguments.output, exist_ok=True)
    for name, lines in [
        ("Frame+Encoding.generated.swift", encoding_file(cases, messages)),
        ("Frame+Decoding.generated.swift", decoding_file(cases, messages)),
    ]:
        too_long = [line for line in lines if len(line) > LINE_LENGTH]
        if too_long:
            sys.exit(f"generate-codec: {name}: lines over {LINE_LENGTH} characters: {too_long}")
        with open(os.path.join(arguments.output, name), "w", encoding="utf-8", newline="\n") as handle:
            handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
