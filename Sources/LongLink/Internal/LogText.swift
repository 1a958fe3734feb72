/// Text bound for the app's log: what the client logs may quote a server (a `GoAway` reason, an
/// error's message) or a login error, so control characters are escaped (no forged lines, no
/// terminal escapes) and the length is capped (a hostile server cannot fill the log, and a long
/// token quoted back is cut).
enum LogText {
    /// The longest message kept, in characters.
    static let messageLimit = 512
    /// The longest metadata value kept, in characters.
    static let valueLimit = 128

    static func bounded(_ text: String, limit: Int) -> String {
        var result = ""
        var kept = 0
        for character in text {
            guard kept < limit else {
                return result + "…(\(text.count - kept) more)"
            }
            kept += 1
            if character.unicodeScalars.contains(where: isControl) {
                for scalar in character.unicodeScalars {
                    result += isControl(scalar) ? "\\u{\(String(scalar.value, radix: 16))}" : String(scalar)
                }
            } else {
                result.append(character)
            }
        }
        return result
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format
            || scalar == "\u{2028}" || scalar == "\u{2029}"
    }
}

extension LogRecord {
    /// A record of the client's own, its text bounded by ``LogText``.
    init(bounded level: Level, _ message: String, metadata: [String: String] = [:]) {
        self.init(
            level: level, message: LogText.bounded(message, limit: LogText.messageLimit),
            metadata: metadata.mapValues { LogText.bounded($0, limit: LogText.valueLimit) })
    }
}
