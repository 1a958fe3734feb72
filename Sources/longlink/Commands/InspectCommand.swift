import LongLinkCLISupport
import LongLinkWire

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `longlink inspect [FILE]`: decodes a stream of delimited frames into one JSON object per line.
enum InspectCommand: Subcommand {
    static let spec = CommandSpec(
        name: "inspect",
        summary: "Decode a byte stream of delimited frames into one JSON object per frame.",
        discussion: """
            Reads FILE, or standard input when FILE is absent or '-'. Each frame becomes one line:
              {"offset":0,"size":12,"frame":{"request":{"requestId":"1","method":"echo","payload":"aGk="}},
               "notes":{"kind":"request","payloadText":"hi"}}
            frame is the canonical proto3 JSON of longlink.v1.Frame: any protobuf runtime parses it
            (Python: json_format.Parse(json.dumps(line["frame"]), Frame())). lowerCamelCase names,
            defaults left out, uint64 as strings, bytes as base64; an empty or unknown frame is {}.
            offset is where the frame's length prefix starts, size the bytes it takes with that
            prefix. notes is for people: kind (hello, ..., go_away, unrecognized), payloadText for
            printable UTF-8, statusName (Response) or codeName (GoAway).
            On malformed input the frames before it are printed, then an error with its offset goes to
            standard error and the status is 1. A stream that ends inside a frame is reported the same
            way ("truncated frame at offset N").
            """,
        positionals: [
            PositionalSpec("FILE", help: "The file to read; '-' or absent: standard input.", isOptional: true)
        ],
        options: [
            .value(
                "max-frame-bytes", "N",
                help: "Reject frames larger than N bytes, as a peer would (default \(Frame.defaultMaxFrameBytes)).")
        ]
    )

    static func run(_ arguments: ParsedArguments) async throws(UsageError) -> Int32 {
        let maxFrameBytes =
            try arguments.integer("max-frame-bytes", in: 0...Int(UInt32.max)) ?? Frame.defaultMaxFrameBytes
        let path = arguments.positionals.first ?? "-"
        let err = Terminal.standardError
        let descriptor: Int32
        if path == "-" {
            descriptor = 0
        } else {
            descriptor = open(path, O_RDONLY)
            guard descriptor >= 0 else {
                err.line("longlink inspect: cannot open \(path): \(String(cString: strerror(errno)))")
                return ExitStatus.failure
            }
        }
        defer { if descriptor != 0 { close(descriptor) } }
        var inspector = FrameInspector(maxFrameBytes: maxFrameBytes)
        var output = BufferedOutput(terminal: .standardOutput)
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                output.flush()
                err.line("longlink inspect: cannot read \(path): \(String(cString: strerror(errno)))")
                return ExitStatus.failure
            }
            let problem: String?
            if count == 0 {
                problem = inspector.finish(into: &output)
            } else {
                problem = chunk.withUnsafeBytes {
                    inspector.feed(UnsafeRawBufferPointer(rebasing: $0[..<count]), into: &output)
                }
            }
            if let problem {
                output.flush()
                err.line("longlink inspect: \(problem)")
                return ExitStatus.failure
            }
            if count == 0 { break }
        }
        output.flush()
        return ExitStatus.success
    }
}

/// Feeds bytes to a ``FrameDecoder`` and writes each frame as a JSON line with its offset and size.
struct FrameInspector {
    private var decoder: FrameDecoder

    init(maxFrameBytes: Int) {
        decoder = FrameDecoder(maxFrameBytes: maxFrameBytes)
    }

    /// Decodes what `bytes` completes. Returns the error text when the stream is malformed.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, into output: inout BufferedOutput) -> String? {
        decoder.append(bytes)
        while true {
            let offset = decoder.consumedByteCount
            do {
                guard let frame = try decoder.next() else { return nil }
                let size = decoder.consumedByteCount - offset
                output.line(FrameJSON.line(for: frame, offset: offset, size: size))
            } catch {
                return "malformed frame at offset \(offset): \(error)"
            }
        }
    }

    /// The end of the stream: an error text when it stopped inside a frame.
    mutating func finish(into output: inout BufferedOutput) -> String? {
        guard decoder.bufferedByteCount > 0 else { return nil }
        return "truncated frame at offset \(decoder.consumedByteCount)"
            + " (\(decoder.bufferedByteCount) bytes at the end do not make a whole frame)"
    }
}

/// Collects output lines and writes them in blocks of about 64 KiB.
struct BufferedOutput {
    let terminal: Terminal
    private var buffer = ""

    init(terminal: Terminal) {
        self.terminal = terminal
    }

    mutating func line(_ text: String) {
        buffer += text
        buffer += "\n"
        if buffer.utf8.count >= 64 * 1024 { flush() }
    }

    mutating func flush() {
        guard !buffer.isEmpty else { return }
        terminal.write(buffer)
        buffer = ""
    }
}
