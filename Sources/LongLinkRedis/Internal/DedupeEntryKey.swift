/// The names of one de-dup entry in Redis and of the keys of its hash tag that account for it
/// (see ``DedupeScripts``).
struct DedupeEntryKey: Sendable, Hashable {
    /// The entry: `<tag>:d:<client>:<request id>`.
    let name: String
    /// `<client>:<request id>` (the client escaped, so that it holds no `:`): the entry's name in
    /// its tag's index, after its charge.
    let member: String
    /// `<tag>:da`, a hash: `n` and `b`, the entries and bytes the tag holds; `n:<client>` and
    /// `b:<client>`, those of one client.
    let accounts: String
    /// `<tag>:dx`, a sorted set: `<charge>:<member>` of each entry, scored by its expiry (Redis
    /// time, ms). The accounts always sum it.
    let index: String
    /// No login bound the connection: the tag is the shared `{a}`, with its own budget.
    let isAnonymous: Bool

    /// The bytes an entry holding `value` is charged: its name and its value.
    func charge(_ value: some Collection<UInt8>) -> Int { name.utf8.count + value.count }

    /// The entry's name in the index while it holds `value`.
    func indexed(_ value: some Collection<UInt8>) -> String { "\(charge(value)):\(member)" }
}
