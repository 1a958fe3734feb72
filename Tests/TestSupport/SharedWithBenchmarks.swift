@_spi(Benchmarks) import LongLinkTesting

/// LongLinkTesting's seeded generator, shared with the benchmarks, for the test targets that do
/// not import LongLinkTesting.
package typealias SplitMix64 = LongLinkTesting.SplitMix64

/// No port below the ephemeral range could be bound.
package typealias NoFreePort = LongLinkTesting.NoFreePort

/// A loopback port nothing listens on right now (LongLinkTesting's, shared with the benchmarks), for
/// a child process told its port on the command line: retry with another when the child cannot
/// bind it. In-process servers bind port 0, or a `ReservedPort` the test holds.
package func freePort() async throws -> Int {
    try await LongLinkTesting.freePort()
}
