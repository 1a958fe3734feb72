import FuzzKit

/// The client's inbound path fed arbitrary frames and events, through the pure state machines the
/// core drives (``ClientModel`` mirrors how it drives them). Nothing may trap, and after every
/// event the machines must agree with each other and with the model (see ``ClientModel/checkInvariants()``).
@_cdecl("LLVMFuzzerTestOneInput")
public func clientInboundFuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    ClientModel.run(start, count)
}

extension ClientModel: ScriptModel {}
