/// Durations as people type them on the command line: `250ms`, `5s`, `2m`, `1h`, or a plain number
/// of seconds (`5`, `1.5`).
///
/// The number may have a fraction (`0.5s`, `1.25m`); it is converted exactly, without floating
/// point, down to nanoseconds (finer digits are cut off). Negative numbers, signs, spaces, empty
/// numbers and other units are rejected.
package enum DurationText {
    private static let units: [(suffix: String, nanoseconds: Int64)] = [
        ("ms", 1_000_000),
        ("s", 1_000_000_000),
        ("m", 60_000_000_000),
        ("h", 3_600_000_000_000),
    ]

    /// The duration `text` denotes, or nil when it is not one.
    package static func parse(_ text: String) -> Duration? {
        var number = Substring(text)
        var unit: Int64 = 1_000_000_000
        // "ms" before "m" and "s": the first suffix that matches wins.
        for candidate in units where text.hasSuffix(candidate.suffix) {
            number = text.dropLast(candidate.suffix.count)
            unit = candidate.nanoseconds
            break
        }
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0]
        let fraction = parts.count > 1 ? parts[1] : ""
        guard !whole.isEmpty || !fraction.isEmpty,
            whole.allSatisfy(\.isASCIIDigit), fraction.allSatisfy(\.isASCIIDigit),
            parts.count == 1 || !fraction.isEmpty
        else {
            return nil
        }
        guard let wholeValue = whole.isEmpty ? 0 : Int64(whole) else { return nil }
        let (scaled, overflow) = wholeValue.multipliedReportingOverflow(by: unit)
        guard !overflow else { return nil }
        // The fraction, exactly: each digit is worth a tenth of the one before.
        var fractionNanoseconds: Int64 = 0
        var place = unit
        for digit in fraction {
            place /= 10
            if place == 0 { break }
            fractionNanoseconds += Int64(digit.asciiValue! - 48) * place
        }
        let (total, overflowTotal) = scaled.addingReportingOverflow(fractionNanoseconds)
        guard !overflowTotal else { return nil }
        return .nanoseconds(total)
    }

    /// The shortest exact text for `duration` in the units `parse` reads: `250ms`, `15s`, `2m`.
    package static func format(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = seconds * 1_000 + attoseconds / 1_000_000_000_000_000
        if attoseconds % 1_000_000_000_000_000 != 0 {
            return "\(Double(seconds) + Double(attoseconds) / 1e18)"
        }
        if milliseconds % 3_600_000 == 0, milliseconds != 0 { return "\(milliseconds / 3_600_000)h" }
        if milliseconds % 60_000 == 0, milliseconds != 0 { return "\(milliseconds / 60_000)m" }
        if milliseconds % 1_000 == 0 { return "\(milliseconds / 1_000)s" }
        return "\(milliseconds)ms"
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool {
        guard let ascii = asciiValue else { return false }
        return ascii >= 48 && ascii <= 57
    }
}
