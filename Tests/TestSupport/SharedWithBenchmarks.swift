@_spi(Benchmarks) import LongLinkTesting

/// LongLinkTesting's seeded generator, shared with the benchmarks, for the test targets that do
/// not import LongLinkTesting.
package typealias SplitMix64 = LongLinkTesting.SplitMix64

/// No port below the ephemeral range could be bound.
package typealias NoFreePort = LongLinkTesting.NoFreePort

/// A loopback port nothing listens on right now (LongLinkTesting's, shared with the benchmarks).
package func freePort() async throws -> Int {
    try await LongLinkTesting.freePort()
}
