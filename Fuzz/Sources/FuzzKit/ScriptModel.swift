/// A model the stateful targets drive: one event per script step, the invariants after each.
public protocol ScriptModel {
    associatedtype Event: CaseIterable, RawRepresentable where Event.RawValue == UInt8

    init()
    mutating func handle(_ event: Event, _ input: inout FuzzInput)
    func checkInvariants()
    /// The input ended: wind everything down and check that nothing was left behind.
    mutating func finish()
}

extension ScriptModel {
    /// Runs the script in the fuzzer's input against a fresh model.
    public static func run(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
        var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
        var model = Self()
        var events = 0
        // Bounded, so that one input cannot run for seconds (libFuzzer would call it a timeout).
        while !input.isAtEnd, events < 4_096 {
            model.handle(Event.from(input.byte()), &input)
            model.checkInvariants()
            events += 1
        }
        model.finish()
        return 0
    }
}
