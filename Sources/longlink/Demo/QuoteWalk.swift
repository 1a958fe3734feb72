/// The demo feed's prices: a random walk per symbol, in whole cents, deterministic for a seed.
///
/// Each symbol has its own generator, seeded from the walk's seed and the symbol's name, and its
/// own starting price (from 50.00 to 199.99, from the name), so a symbol's path depends only on
/// the seed and on how many steps it has taken since it was first watched, not on which other
/// symbols are watched. A step moves the price by a uniformly drawn amount of at most
/// `volatilityBasisPoints` of the price (at least one cent); prices never go below one cent.
/// An alert fires when a step crosses a multiple of `alertStepCents`.
struct QuoteWalk: Sendable {
    /// One symbol after a step.
    struct Tick: Sendable, Hashable {
        var symbol: String
        var cents: Int
        /// True when this step crossed an alert threshold.
        var crossedThreshold: Bool
    }

    private struct SymbolState: Sendable {
        var generator: SplitMix64
        var cents: Int
    }

    let seed: UInt64
    let volatilityBasisPoints: Int
    let alertStepCents: Int?
    private var symbols: [String: SymbolState] = [:]

    init(seed: UInt64, volatilityBasisPoints: Int = 20, alertStepCents: Int? = 500) {
        self.seed = seed
        self.volatilityBasisPoints = max(0, volatilityBasisPoints)
        self.alertStepCents = alertStepCents.flatMap { $0 > 0 ? $0 : nil }
    }

    /// The price a symbol has now, or would start at.
    func cents(of symbol: String) -> Int {
        symbols[symbol]?.cents ?? Self.startingCents(symbol)
    }

    /// Moves every symbol in `watched` one step, in the order given.
    mutating func step(_ watched: [String]) -> [Tick] {
        watched.map { step($0) }
    }

    /// Moves one symbol one step.
    mutating func step(_ symbol: String) -> Tick {
        var state =
            symbols[symbol]
            ?? SymbolState(generator: SplitMix64(seed: seed ^ Self.fnv1a(symbol)), cents: Self.startingCents(symbol))
        let before = state.cents
        let reach = max(1, before * volatilityBasisPoints / 10_000)
        let move = Int(state.generator.next() % UInt64(2 * reach + 1)) - reach
        state.cents = max(1, before + move)
        symbols[symbol] = state
        var crossed = false
        if let step = alertStepCents {
            crossed = before / step != state.cents / step
        }
        return Tick(symbol: symbol, cents: state.cents, crossedThreshold: crossed)
    }

    /// Forgets symbols nobody watches any more.
    mutating func retain(only watched: Set<String>) {
        symbols = symbols.filter { watched.contains($0.key) }
    }

    static func startingCents(_ symbol: String) -> Int {
        5_000 + Int(fnv1a(symbol) % 15_000)
    }

    /// FNV-1a over the UTF-8 bytes: a hash that is the same in every process (unlike `Hasher`).
    static func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// `5`, `0.25`, `12.5` as cents; nil for anything else (signs, more than two decimals, overflow).
    static func parseCents(_ text: String) -> Int? {
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let isDigits = { (part: Substring) in
            part.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        }
        guard !parts[0].isEmpty, parts[0].count <= 12, isDigits(parts[0]), let whole = Int(parts[0]) else { return nil }
        guard parts.count == 2 else { return whole * 100 }
        let fraction = parts[1]
        guard (1...2).contains(fraction.count), isDigits(fraction), let value = Int(fraction) else { return nil }
        return whole * 100 + (fraction.count == 1 ? value * 10 : value)
    }

    /// `12345` cents as `123.45`.
    static func format(cents: Int) -> String {
        let fraction = cents % 100
        return "\(cents / 100)." + (fraction < 10 ? "0" : "") + "\(fraction)"
    }
}

/// SplitMix64: a small, fast, seedable generator (Steele, Lea and Flood, 2014).
struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
