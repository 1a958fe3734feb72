import LongLinkWire
import Testing

@Suite("Durations in wire fields")
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

    @Test func secondsAsADouble() {
        #expect(Duration.milliseconds(1_500).seconds == 1.5)
        #expect(Duration.zero.seconds == 0)
    }
}
