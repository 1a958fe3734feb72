// The types of the lower layers that the server's public API speaks in, re-exported one by one so
// that `import LongLinkServer` alone is enough to write handlers and run a server, and nothing else
// of those layers (the event loop, connections, listeners, frames) reaches a user's code. The
// client re-exports the same declarations (see `Sources/LongLink/Exports.swift` for why these are
// re-exports and not typealiases).
@_exported public import struct LongLinkCore.LongLinkError
@_exported public import protocol LongLinkCore.MetricsCounter
@_exported public import protocol LongLinkCore.MetricsGauge
@_exported public import protocol LongLinkCore.MetricsSink
@_exported public import protocol LongLinkCore.MetricsTimer
@_exported public import class LongLinkCore.PrometheusMetrics
@_exported public import struct LongLinkCore.StatusCode
@_exported public import enum LongLinkTransport.ClientCertificateVerification
@_exported public import struct LongLinkTransport.ConnectionOptions
@_exported public import enum LongLinkTransport.Endpoint
@_exported public import protocol LongLinkTransport.LongLinkClock
@_exported public import enum LongLinkTransport.PEMSource
@_exported public import protocol LongLinkTransport.ScheduledWork
@_exported public import struct LongLinkTransport.ServerTLSConfiguration
@_exported public import struct LongLinkTransport.SocketAddress
@_exported public import struct LongLinkTransport.SystemClock
@_exported public import struct LongLinkTransport.TLSFailure
@_exported public import enum LongLinkTransport.TLSTrustRoots
@_exported public import enum LongLinkTransport.TLSVersion
@_exported public import struct LongLinkWire.JSONPayloadCodec
@_exported public import protocol LongLinkWire.LongLinkBinaryMessage
@_exported public import protocol LongLinkWire.LongLinkRequest
@_exported public import protocol LongLinkWire.LongLinkTopic
@_exported public import protocol LongLinkWire.PayloadCodec
@_exported public import struct LongLinkWire.PayloadCompression
@_exported public import struct LongLinkWire.RawPayload
@_exported public import struct LongLinkWire.TopicKind
@_exported public import struct LongLinkWire.TopicName
@_exported public import struct LongLinkWire.TopicPattern
