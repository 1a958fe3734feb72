// The error type and status codes live in LongLinkCore, below the wire and the transport; the wire
// re-exports them so that `import LongLinkWire` sees them as before.
@_exported public import struct LongLinkCore.LongLinkError
@_exported public import struct LongLinkCore.StatusCode
