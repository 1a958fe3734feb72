// The types of the lower layers that the client's public API speaks in, re-exported one by one so
// that `import LongLink` alone is enough to use the client, and nothing else of those layers (the
// event loop, connections, listeners, frames) reaches a user's code.
//
// Why re-exports and not typealiases: a typealias gives the type's name, but under the
// `MemberImportVisibility` upcoming feature the members declared in the type's extensions (say
// `LongLinkError.description`) would then need `import LongLinkWire` in the user's file; a scoped
// re-export makes the declaring module visible for those members too. The server re-exports the
// same declarations, so a file importing both modules sees one `LongLinkError`, not two.
@_exported public import struct LongLinkCore.LongLinkError
@_exported public import protocol LongLinkCore.MetricsCounter
@_exported public import protocol LongLinkCore.MetricsGauge
@_exported public import protocol LongLinkCore.MetricsSink
@_exported public import protocol LongLinkCore.MetricsTimer
@_exported public import class LongLinkCore.PrometheusMetrics
@_exported public import struct LongLinkCore.StatusCode
@_exported public import enum LongLinkTransport.CertificateVerification
@_exported public import struct LongLinkTransport.ConnectionOptions
@_exported public import enum LongLinkTransport.Endpoint
@_exported public import protocol LongLinkTransport.LongLinkClock
@_exported public import enum LongLinkTransport.PEMSource
@_exported public import protocol LongLinkTransport.ScheduledWork
@_exported public import struct LongLinkTransport.SystemClock
@_exported public import struct LongLinkTransport.TLSConfiguration
@_exported public import struct LongLinkTransport.TLSFailure
@_exported public import struct LongLinkTransport.TLSPublicKeyPin
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
