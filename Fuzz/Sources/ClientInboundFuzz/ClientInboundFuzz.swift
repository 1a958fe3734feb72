import FuzzKit

/// The client's inbound path fed arbitrary frames and events, through the client's own machine
/// (``ClientScript`` feeds ``ClientStateMachine`` as the core does). Nothing may trap, and after
/// every event the machine must hold its invariants (see ``ClientScript/checkInvariants()``).
@_cdecl("LLVMFuzzerTestOneInput")
public func clientInboundFuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    ClientScript.run(start, count)
}

extension ClientScript: ScriptModel {}
