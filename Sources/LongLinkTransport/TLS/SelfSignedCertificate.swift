import LongLinkCore

#if canImport(COpenSSL) && !LONGLINK_NO_OPENSSL
    internal import COpenSSL
#endif

/// A certificate and key made at run time with OpenSSL's C API, for `longlink demo --tls`: an
/// EC P-256 key and a self-signed certificate naming `localhost` and `127.0.0.1`, valid from an
/// hour ago for `validity`. A client trusts it by taking the certificate as its trust root.
package struct SelfSignedCertificate: Sendable {
    /// The certificate, PEM.
    package let certificatePEM: [UInt8]
    /// The private key, PEM (unencrypted).
    package let privateKeyPEM: [UInt8]

    #if canImport(COpenSSL) && !LONGLINK_NO_OPENSSL
        package init(commonName: String = "LongLink demo", validity: Duration = .seconds(86_400))
            throws(LongLinkError)
        {
            func failure(_ step: String) -> LongLinkError {
                .tls(.handshakeFailed, "cannot make a certificate (\(step))", detail: OpenSSLErrors.drain())
            }
            guard let key = longlink_EVP_EC_gen("prime256v1") else { throw failure("key") }
            defer { EVP_PKEY_free(key) }
            guard let certificate = X509_new() else { throw failure("certificate") }
            defer { X509_free(certificate) }
            X509_set_version(certificate, 2)
            ASN1_INTEGER_set(X509_get_serialNumber(certificate), Int.random(in: 1...Int(Int32.max)))
            X509_gmtime_adj(X509_getm_notBefore(certificate), -3600)
            X509_gmtime_adj(X509_getm_notAfter(certificate), Int(validity.components.seconds))
            X509_set_pubkey(certificate, key)
            let name = X509_get_subject_name(certificate)
            X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0)
            X509_set_issuer_name(certificate, name)
            guard let names = X509V3_EXT_conf_nid(nil, nil, NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1")
            else { throw failure("subjectAltName") }
            X509_add_ext(certificate, names, -1)
            X509_EXTENSION_free(names)
            guard X509_sign(certificate, key, EVP_sha256()) > 0 else { throw failure("signature") }
            certificatePEM = try Self.pem(failure("PEM")) { PEM_write_bio_X509($0, certificate) }
            privateKeyPEM = try Self.pem(failure("PEM")) { PEM_write_bio_PrivateKey($0, key, nil, nil, 0, nil, nil) }
        }

        private static func pem(_ failure: @autoclosure () -> LongLinkError, _ write: (OpaquePointer) -> Int32)
            throws(LongLinkError) -> [UInt8]
        {
            guard let bio = BIO_new(BIO_s_mem()) else { throw failure() }
            defer { BIO_free(bio) }
            guard write(bio) == 1 else { throw failure() }
            let count = Int(BIO_ctrl_pending(bio))
            return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
                initialized = Int(max(0, BIO_read(bio, buffer.baseAddress, Int32(count))))
            }
        }
    #else
        package init(commonName: String = "LongLink demo", validity: Duration = .seconds(86_400))
            throws(LongLinkError)
        {
            throw .tls(.unavailable, "TLS is not available on this platform yet")
        }
    #endif
}
