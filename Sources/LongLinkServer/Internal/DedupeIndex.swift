/// The de-duplication window's key index: slot numbers by key hash.
///
/// Open addressing with linear probing over 8-byte buckets: 0 is empty, otherwise the low 32
/// bits of the key's hash (which also give the home bucket) above `slot + 1`, so that a probe
/// reads no key and growing or removing never hashes a key again. Kept at most half full.
struct DedupeIndex: Sendable {
    private var buckets = [UInt64](repeating: 0, count: 16)

    private var mask: Int { buckets.count - 1 }

    private static func tag(_ hash: Int) -> UInt64 { UInt64(UInt32(truncatingIfNeeded: hash)) }

    /// The slot of the key hashing to `hash` for which `isKey` is true, if present, and the bucket
    /// where the search ended (its bucket, or the empty one where it belongs).
    func find(hash: Int, isKey: (Int) -> Bool) -> (bucket: Int, slot: Int?) {
        let tag = Self.tag(hash)
        var bucket = Int(truncatingIfNeeded: tag) & mask
        while true {
            let value = buckets[bucket]
            if value == 0 { return (bucket, nil) }
            if value >> 32 == tag {
                let slot = Int(truncatingIfNeeded: value & 0xFFFF_FFFF) - 1
                if isKey(slot) { return (bucket, slot) }
            }
            bucket = (bucket + 1) & mask
        }
    }

    /// Puts `slot` in `bucket` (where ``find(hash:isKey:)`` ended); `count` is the number of
    /// slots indexed with it, which decides when the table grows.
    mutating func insert(slot: Int, hash: Int, at bucket: Int, count: Int) {
        buckets[bucket] = Self.tag(hash) << 32 | UInt64(slot + 1)
        if count * 2 > buckets.count { grow() }
    }

    /// Removes `slot` (whose key hashes to `hash`).
    mutating func remove(slot: Int, hash: Int) {
        removeBucket(bucket(of: slot, hash: hash))
    }

    /// The bucket that points at `slot`.
    private func bucket(of slot: Int, hash: Int) -> Int {
        let tag = Self.tag(hash)
        let wanted = tag << 32 | UInt64(slot + 1)
        var bucket = Int(truncatingIfNeeded: tag) & mask
        while buckets[bucket] != wanted {
            bucket = (bucket + 1) & mask
        }
        return bucket
    }

    /// Backward-shift deletion: moves later members of the probe run into the hole, so lookups
    /// need no tombstones.
    private mutating func removeBucket(_ removed: Int) {
        var hole = removed
        var next = (removed + 1) & mask
        while buckets[next] != 0 {
            let home = Int(truncatingIfNeeded: buckets[next] >> 32) & mask
            // The member may move back when the hole lies between its home and where it sits.
            if (next &- home) & mask >= (next &- hole) & mask {
                buckets[hole] = buckets[next]
                hole = next
            }
            next = (next + 1) & mask
        }
        buckets[hole] = 0
    }

    private mutating func grow() {
        let old = buckets
        buckets = [UInt64](repeating: 0, count: old.count * 2)
        for value in old where value != 0 {
            var bucket = Int(truncatingIfNeeded: value >> 32) & mask
            while buckets[bucket] != 0 { bucket = (bucket + 1) & mask }
            buckets[bucket] = value
        }
    }
}
