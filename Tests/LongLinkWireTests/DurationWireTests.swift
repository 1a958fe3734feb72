import LongLinkWire
import LongLinkTestSupport
import Testing

@Suite("Durations in wire fields", .sharedMachine)
struct DurationWireTests {
    @Test func millisecondFieldsTruncateAndClamp() {
        #expect(Duration.seconds(15).wireMilliseconds == 15_000)
        #expect(Duration.microseconds(1_900).wireMilliseconds == 1)
        #expect(Duration.zero.wireMilliseconds == 0)
        #expect(Duration.milliseconds(-5).wireMilliseconds == 0)
        #expect(Duration.seconds(10_000_000).wireMilliseconds == UInt32.max)
        #expect(Duration.seconds(Int64.max).wireMilliseconds == UInt32.max)
        #expect(Duration.seconds(Int64.min).wireMilliseconds == 0)
    }

    @Test func nanosecondsRoundDownAndClamp() {
        #expect(Duration.milliseconds(1_500).nanoseconds(clampedTo: .max) == 1_500_000_000)
        #expect(Duration.nanoseconds(-7).nanoseconds(clampedTo: .max) == -7)
        // Below a whole nanosecond, toward negative infinity (also for negative durations).
        let justOverFive = Duration.nanoseconds(5) + Duration(secondsComponent: 0, attosecondsComponent: 1)
        #expect(justOverFive.nanoseconds(clampedTo: .max) == 5)
        #expect(Duration(secondsComponent: 0, attosecondsComponent: -1).nanoseconds(clampedTo: .max) == -1)
        #expect(Duration.seconds(10).nanoseconds(clampedTo: 1_000) == 1_000)
        #expect(Duration.seconds(-10).nanoseconds(clampedTo: 1_000) == -1_000)
        // Past the Int64 range: saturated, not wrapped.
        #expect(Duration.seconds(Int64.max).nanoseconds(clampedTo: .max) == .max)
        #expect(Duration.seconds(Int64.min).nanoseconds(clampedTo: .max) == -.max)
    }

    @Test func secondsAsADouble() {
        #expect(Duration.milliseconds(1_500).seconds == 1.5)
        #expect(Duration.zero.seconds == 0)
    }
}
