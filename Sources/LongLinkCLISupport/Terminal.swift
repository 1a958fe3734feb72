#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Standard output or standard error: unbuffered writes, colour only on a terminal, aligned columns.
///
/// Writes go straight to the file descriptor (no stdio buffer), so a line is visible to a reader
/// of a pipe as soon as it is written: `longlink serve` relies on that for its first line.
package struct Terminal: Sendable {
    /// Text styles, as ANSI escape sequences.
    package enum Style: Sendable {
        case bold
        case dim
        case red
        case green
        case yellow
        case cyan

        fileprivate var code: String {
            switch self {
            case .bold: "1"
            case .dim: "2"
            case .red: "31"
            case .green: "32"
            case .yellow: "33"
            case .cyan: "36"
            }
        }
    }

    /// Standard output.
    package static let standardOutput = Terminal(fileDescriptor: 1)
    /// Standard error.
    package static let standardError = Terminal(fileDescriptor: 2)

    package let fileDescriptor: Int32
    /// True when the descriptor is a terminal, `NO_COLOR` is unset and `TERM` is not `dumb`.
    package let usesColour: Bool

    package init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
        let environment = { (name: String) -> String? in getenv(name).map { String(cString: $0) } }
        self.usesColour =
            isatty(fileDescriptor) == 1 && (environment("NO_COLOR").map(\.isEmpty) ?? true)
            && environment("TERM") != "dumb"
    }

    /// `text` in `style` when colour is on, else `text` unchanged.
    package func styled(_ text: String, _ style: Style) -> String {
        usesColour ? "\u{1B}[\(style.code)m\(text)\u{1B}[0m" : text
    }

    /// Writes `text` as it is. Returns false when the descriptor is closed or broken (a reader of
    /// the pipe went away); the caller may stop writing then.
    @discardableResult
    package func write(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { write(bytes: UnsafeRawBufferPointer($0)) }
    }

    /// Writes raw bytes (a reply payload) as they are. Returns false like ``write(_:)``.
    @discardableResult
    package func write(bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { write(bytes: $0) }
    }

    private func write(bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(fileDescriptor, base + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR || errno == EAGAIN { continue }
                return false
            }
            offset += written
        }
        return true
    }

    /// Writes `text` and a newline.
    @discardableResult
    package func line(_ text: String) -> Bool {
        write(text + "\n")
    }

    /// Lays out rows of cells in columns separated by `gap` spaces, each line indented by `indent`.
    /// Widths count characters, so style cells after laying them out, not before.
    package static func columns(_ rows: [[String]], indent: Int = 2, gap: Int = 2) -> String {
        let columnCount = rows.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columnCount)
        for row in rows {
            for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) }
        }
        var text = ""
        for row in rows {
            var line = String(repeating: " ", count: indent)
            for (column, cell) in row.enumerated() {
                line += cell
                if column < row.count - 1 {
                    line += String(repeating: " ", count: widths[column] - cell.count + gap)
                }
            }
            text += line + "\n"
        }
        return text
    }
}

private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
        Glibc.write(descriptor, bytes, count)
    #else
        Darwin.write(descriptor, bytes, count)
    #endif
}
