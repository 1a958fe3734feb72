// The TLS types of ``RedisConfiguration/tls`` that `import LongLinkServer` does not already bring
// (the server speaks only its own side of TLS), re-exported one by one as the client does (see
// `Sources/LongLink/Exports.swift` for why re-exports and not typealiases).
@_exported public import enum LongLinkTransport.CertificateVerification
@_exported public import struct LongLinkTransport.TLSConfiguration
@_exported public import struct LongLinkTransport.TLSPublicKeyPin
