/// Text from the other end of a link, made safe to print.
extension Terminal {
    /// `text` with every control character written out: C0 controls and DEL as `\xHH` (`\x1B` for
    /// ESC), C1 controls as `\xHH` too, and the bidirectional overrides and isolates as
    /// `\u{HHHH}`. Everything else is kept.
    ///
    /// A server's error message or `GoAway` reason is the server's text: printed raw, an escape
    /// sequence in it would clear the screen, retitle the window or hide what comes before it, and
    /// a newline would forge a line of the tool's own output.
    package static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var result = ""
        result.reserveCapacity(text.utf8.count + 8)
        for scalar in text.unicodeScalars {
            guard needsEscape(scalar) else {
                result.unicodeScalars.append(scalar)
                continue
            }
            let hex = String(scalar.value, radix: 16, uppercase: true)
            if scalar.value < 0x100 {
                result += "\\x" + (hex.count < 2 ? "0" + hex : hex)
            } else {
                result += "\\u{" + hex + "}"
            }
        }
        return result
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        // Bidirectional embeddings, overrides and isolates: they reorder what is printed after them.
        case 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }
}
