/// A small deterministic random number generator (SplitMix64), so that every generated input can be
/// reproduced from its seed: tests' inputs (this package's and users') and the benchmarks' payloads.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    /// A generator whose sequence is fixed by `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    /// A number in `0..<bound` (the modulo bias is irrelevant for generated data).
    public mutating func next(below bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }
}
