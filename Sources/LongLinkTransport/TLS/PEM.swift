#if canImport(COpenSSL) && !LONGLINK_NO_OPENSSL
    internal import COpenSSL
    import LongLinkCore

    /// Reading certificates and keys from PEM files or bytes.
    enum PEM {
        /// Every certificate in `source`, in order (at least one). The caller frees them.
        static func certificates(from source: PEMSource, what: String) throws(LongLinkError) -> [OpaquePointer] {
            let bio = try open(source, what: what)
            defer { BIO_free(bio) }
            var certificates: [OpaquePointer] = []
            while let certificate = PEM_read_bio_X509(bio, nil, nil, nil) {
                certificates.append(certificate)
            }
            // The loop ends on "no start line" past the last certificate: not an error.
            ERR_clear_error()
            guard !certificates.isEmpty else {
                throw LongLinkError(
                    code: .invalidConfiguration, message: "no PEM certificate in the \(what) (\(describe(source)))")
            }
            return certificates
        }

        /// The private key in `source`. The caller frees it.
        static func privateKey(from source: PEMSource) throws(LongLinkError) -> OpaquePointer {
            let bio = try open(source, what: "private key")
            defer { BIO_free(bio) }
            guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
                throw LongLinkError(
                    code: .invalidConfiguration,
                    message: "no PEM private key in \(describe(source)): \(OpenSSLErrors.drain())")
            }
            return key
        }

        private static func open(_ source: PEMSource, what: String) throws(LongLinkError) -> OpaquePointer {
            ERR_clear_error()
            let bio: OpaquePointer?
            switch source {
            case .file(let path):
                bio = BIO_new_file(path, "r")
            case .bytes(let bytes):
                // A memory BIO holding its own copy of the text.
                bio = bytes.withUnsafeBytes { buffer in
                    let copy = BIO_new(BIO_s_mem())
                    if let copy, buffer.count > 0 { BIO_write(copy, buffer.baseAddress, Int32(buffer.count)) }
                    return copy
                }
            }
            guard let bio else {
                throw LongLinkError(
                    code: .invalidConfiguration,
                    message: "cannot read the \(what) (\(describe(source))): \(OpenSSLErrors.drain())")
            }
            return bio
        }

        private static func describe(_ source: PEMSource) -> String {
            switch source {
            case .file(let path): path
            case .bytes(let bytes): "\(bytes.count) bytes of PEM"
            }
        }
    }

    /// OpenSSL's thread-local error queue.
    enum OpenSSLErrors {
        /// The reason code of the oldest error, without removing it (0: none).
        static func firstReason() -> Int32 {
            Int32(longlink_ERR_GET_REASON(ERR_peek_error()))
        }

        /// The queued errors as text, oldest first, and empties the queue.
        @discardableResult
        static func drain() -> String {
            var texts: [String] = []
            var buffer = [CChar](repeating: 0, count: 256)
            while true {
                let code = ERR_get_error()
                if code == 0 { break }
                ERR_error_string_n(code, &buffer, buffer.count)
                if texts.count < 4 {
                    texts.append(
                        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
                }
            }
            return texts.isEmpty ? "no detail from OpenSSL" : texts.joined(separator: "; ")
        }
    }
#endif
