/// Standard base64 (RFC 4648, with padding), for public-key pins; the transport has no Foundation.
enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let count = min(3, bytes.count - index)
            var group = UInt32(bytes[index]) << 16
            if count > 1 { group |= UInt32(bytes[index + 1]) << 8 }
            if count > 2 { group |= UInt32(bytes[index + 2]) }
            for position in 0..<4 {
                if position <= count {
                    output.append(alphabet[Int((group >> (18 - 6 * UInt32(position))) & 0x3F)])
                } else {
                    output.append(UInt8(ascii: "="))
                }
            }
            index += 3
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `nil` for anything but well-formed, padded base64.
    static func decode(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 4 == 0 else { return nil }
        var output: [UInt8] = []
        var index = 0
        while index < characters.count {
            var group: UInt32 = 0
            var padding = 0
            for position in 0..<4 {
                let character = characters[index + position]
                group <<= 6
                if character == UInt8(ascii: "=") {
                    // Padding only at the end of the last group.
                    guard index + 4 == characters.count, position >= 2 else { return nil }
                    padding += 1
                } else {
                    guard padding == 0, let value = alphabet.firstIndex(of: character) else { return nil }
                    group |= UInt32(value)
                }
            }
            output.append(UInt8(group >> 16))
            if padding < 2 { output.append(UInt8((group >> 8) & 0xFF)) }
            if padding < 1 { output.append(UInt8(group & 0xFF)) }
            index += 4
        }
        return output
    }
}
