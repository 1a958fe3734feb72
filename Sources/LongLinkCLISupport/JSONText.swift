/// Writes one JSON object by hand, keys in the order they are added: the order is part of the
/// output format (`longlink inspect` promises a stable key order).
package struct JSONObject {
    private var buffer = "{"
    private var isEmpty = true

    package init() {}

    /// Adds `"key":"value"`.
    package mutating func add(_ key: String, _ value: String) {
        addRaw(key, JSONObject.quoted(value))
    }

    /// Adds a whole number.
    package mutating func add(_ key: String, _ value: some BinaryInteger) {
        addRaw(key, "\(value)")
    }

    /// Adds `true` or `false`.
    package mutating func add(_ key: String, _ value: Bool) {
        addRaw(key, value ? "true" : "false")
    }

    /// Adds an object with string values, keys sorted.
    package mutating func add(_ key: String, _ map: [String: String]) {
        var object = JSONObject()
        for entry in map.sorted(by: { $0.key < $1.key }) { object.add(entry.key, entry.value) }
        addRaw(key, object.text())
    }

    /// Adds a value that is JSON text already: a nested object, an array, `null`.
    package mutating func addRaw(_ key: String, _ json: String) {
        if !isEmpty { buffer += "," }
        isEmpty = false
        buffer += JSONObject.quoted(key) + ":" + json
    }

    /// The finished object.
    package func text() -> String {
        buffer + "}"
    }

    /// `value` as a JSON string literal: quotes, backslashes and control characters escaped, and
    /// U+2028 and U+2029 too, which line-oriented tools (and JavaScript) take for line breaks.
    package static func quoted(_ value: String) -> String {
        var out = "\""
        out.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
