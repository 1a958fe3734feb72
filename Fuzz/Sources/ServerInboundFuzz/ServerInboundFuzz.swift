import FuzzKit

/// The server's inbound path fed arbitrary bytes and events: the frame decoder, the session
/// machine, the de-duplication window, the reliable-push window and the partial-frame watch,
/// driven the way `ServerConnection` drives them (``ServerModel``), across reconnections that
/// share one window. Nothing may trap, and the invariants hold after every event.
@_cdecl("LLVMFuzzerTestOneInput")
public func serverInboundFuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    ServerModel.run(start, count)
}

extension ServerModel: ScriptModel {}
