/// The Redis Cluster hash slot of a key, as the Redis Cluster specification defines it: CRC16
/// (XMODEM) of the key's hash tag, or of the whole key when it has none, modulo 16384.
enum ClusterSlot {
    /// The number of hash slots in a cluster.
    static let count = 16384

    /// The slot of `key`: 0..<16384.
    static func of(_ key: some Collection<UInt8>) -> Int {
        Int(crc16(hashTag(of: key)) & 0x3FFF)
    }

    /// The part of `key` that is hashed: what lies between the first `{` and the first `}` after
    /// it, when that is not empty; otherwise the whole key.
    static func hashTag<Key: Collection<UInt8>>(of key: Key) -> Key.SubSequence {
        guard let open = key.firstIndex(of: UInt8(ascii: "{")) else { return key[...] }
        let afterOpen = key.index(after: open)
        guard let close = key[afterOpen...].firstIndex(of: UInt8(ascii: "}")), close != afterOpen else {
            return key[...]
        }
        return key[afterOpen..<close]
    }

    /// CRC16-CCITT (XMODEM): polynomial 0x1021, initial value 0, no reflection, no final XOR.
    static func crc16(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes { crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)] }
        return crc
    }

    private static let table: [UInt16] = (0..<256).map { index in
        var crc = UInt16(index) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}
