/// A short hash tag for every slot, so that a key can be put in the slot of another key without
/// sharing its name (the de-dup lineage record: one per slot, see ``DedupeScripts/claimAllChecked``).
extension ClusterSlot {
    /// A tag whose slot is `slot`: `s` and a base-36 number, the first that hashes there.
    static func tag(of slot: Int) -> String { tags[slot] }

    /// The first `s<n>` of each slot, found by counting up until every slot has one (about 170,000
    /// CRCs of a few bytes: a few milliseconds, once).
    private static let tags: [String] = {
        var tags = [String?](repeating: nil, count: count)
        var missing = count
        var number = 0
        while missing > 0 {
            let tag = "s" + String(number, radix: 36)
            let slot = Int(crc16(tag.utf8) & 0x3FFF)
            if tags[slot] == nil {
                tags[slot] = tag
                missing -= 1
            }
            number += 1
        }
        return tags.compactMap { $0 }
    }()
}
