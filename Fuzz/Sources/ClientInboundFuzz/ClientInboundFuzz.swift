import FuzzKit

/// The client's inbound path fed arbitrary frames and events, through the pure state machines the
/// core drives (``ClientModel`` mirrors how it drives them). Nothing may trap, and after every
/// event the machines must agree with each other and with the model (see ``ClientModel/checkInvariants()``).
@_cdecl("LLVMFuzzerTestOneInput")
public func clientInboundFuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    var input = FuzzInput(UnsafeRawBufferPointer(start: start, count: count))
    var model = ClientModel()
    var events = 0
    // Bounded so that one input cannot run for seconds (libFuzzer would call that a timeout).
    while !input.isAtEnd, events < 4_096 {
        model.handle(ClientEvent.from(input.byte()), &input)
        model.checkInvariants()
        events += 1
    }
    model.finish()
    return 0
}
