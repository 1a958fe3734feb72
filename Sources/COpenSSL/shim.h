// The system OpenSSL (libssl-dev 3.x) for LongLinkTransport's TLS layer. OpenSSL spells some of
// its API as macros over `*_ctrl` calls, which Swift cannot call: the inline functions below give
// those a Swift-callable name, and nothing more.
#ifndef LONGLINK_COPENSSL_SHIM_H
#define LONGLINK_COPENSSL_SHIM_H

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static inline int longlink_SSL_CTX_set_min_proto_version(SSL_CTX *context, int version) {
    return (int)SSL_CTX_set_min_proto_version(context, version);
}

static inline int longlink_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return (int)SSL_set_tlsext_host_name(ssl, name);
}

static inline int longlink_SSL_CTX_add1_chain_cert(SSL_CTX *context, X509 *certificate) {
    return (int)SSL_CTX_add1_chain_cert(context, certificate);
}

static inline long longlink_SSL_CTX_set_mode(SSL_CTX *context, long mode) {
    return SSL_CTX_set_mode(context, mode);
}

static inline long longlink_SSL_MODE_RELEASE_BUFFERS(void) {
    return SSL_MODE_RELEASE_BUFFERS;
}

static inline long longlink_SSL_CTX_set_session_cache_mode(SSL_CTX *context, long mode) {
    return SSL_CTX_set_session_cache_mode(context, mode);
}

static inline int longlink_SSL_CTX_set_num_tickets(SSL_CTX *context, size_t count) {
    return SSL_CTX_set_num_tickets(context, count);
}

/// An elliptic-curve key on `curve` ("prime256v1"), for certificates made at run time.
static inline EVP_PKEY *longlink_EVP_EC_gen(const char *curve) {
    return EVP_EC_gen(curve);
}

static inline int longlink_ERR_GET_REASON(unsigned long error) {
    return ERR_GET_REASON(error);
}

static inline int longlink_ERR_GET_LIB(unsigned long error) {
    return ERR_GET_LIB(error);
}

/// How many certificates the verified chain holds (leaf to trust anchor); 0 when nothing was verified.
static inline int longlink_verified_chain_count(const SSL *ssl) {
    STACK_OF(X509) *chain = SSL_get0_verified_chain(ssl);
    return chain == NULL ? 0 : sk_X509_num(chain);
}

static inline X509 *longlink_verified_chain_at(const SSL *ssl, int index) {
    return sk_X509_value(SSL_get0_verified_chain(ssl), index);
}

/// `certificate`'s subject in RFC 2253 form (`CN=…,O=…`, UTF-8 kept) into `buffer`: the bytes written
/// (at most `capacity`), or -1.
static inline int longlink_X509_subject(X509 *certificate, char *buffer, int capacity) {
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == NULL) return -1;
    unsigned long flags = XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB;
    int status = X509_NAME_print_ex(bio, X509_get_subject_name(certificate), 0, flags);
    int length = status < 0 ? -1 : BIO_read(bio, buffer, capacity);
    BIO_free(bio);
    return length < 0 ? (status < 0 ? -1 : 0) : length;
}

static inline long longlink_SSL_CTX_set_options(SSL_CTX *context, uint64_t options) {
    return (long)SSL_CTX_set_options(context, options);
}

static inline uint64_t longlink_SSL_OP_NO_RENEGOTIATION(void) {
    return SSL_OP_NO_RENEGOTIATION;
}

#endif
