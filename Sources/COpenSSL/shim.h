// OpenSSL 3 for Swift: typed wrappers for the function-like macros Swift cannot import.
#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/cms.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/ocsp.h>
#include <openssl/crypto.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

static inline int copenssl_BN_num_bytes(const BIGNUM *bn) { return BN_num_bytes(bn); }
static inline void copenssl_free(void *p) { OPENSSL_free(p); }
static inline STACK_OF(X509) *copenssl_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int copenssl_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
static inline void copenssl_sk_X509_pop_free(STACK_OF(X509) *sk) { sk_X509_pop_free(sk, X509_free); }
static inline void copenssl_sk_X509_free(STACK_OF(X509) *sk) { sk_X509_free(sk); }
static inline long copenssl_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }
static inline int copenssl_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int v) {
    return (int)SSL_CTX_set_min_proto_version(ctx, v);
}
/// Lets SSL_write report partial writes and accept a moved buffer on retry (non-blocking sockets).
static inline void copenssl_SSL_CTX_set_partial_writes(SSL_CTX *ctx) {
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}
/// Writes `name` to `bio` in RFC 2253 form ("CN=...,O=...,C=..."); the flag set is a macro expression.
static inline int copenssl_X509_NAME_print_rfc2253(BIO *bio, const X509_NAME *name) {
    return X509_NAME_print_ex(bio, name, 0, XN_FLAG_RFC2253);
}
static inline STACK_OF(X509) *copenssl_X509_STORE_CTX_get0_chain(X509_STORE_CTX *ctx) {
    return X509_STORE_CTX_get0_chain(ctx);
}
static inline int copenssl_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline X509 *copenssl_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
/// The text of a URI or DNS general name (IA5String bytes, not NUL-terminated); 0 for other name types.
static inline int copenssl_general_name_text(const GENERAL_NAME *name, int *type, const unsigned char **data, int *length) {
    *type = name->type;
    if (name->type != GEN_URI && name->type != GEN_DNS) return 0;
    const ASN1_STRING *text = name->type == GEN_URI ? name->d.uniformResourceIdentifier : name->d.dNSName;
    if (text == NULL) return 0;
    *data = ASN1_STRING_get0_data(text);
    *length = ASN1_STRING_length(text);
    return 1;
}
static inline int copenssl_sk_OPENSSL_STRING_num(const STACK_OF(OPENSSL_STRING) *sk) {
    return sk_OPENSSL_STRING_num(sk);
}
static inline const char *copenssl_sk_OPENSSL_STRING_value(const STACK_OF(OPENSSL_STRING) *sk, int i) {
    return sk_OPENSSL_STRING_value(sk, i);
}
static inline const EVP_MD *copenssl_EVP_get_digestbyobj(const ASN1_OBJECT *o) { return EVP_get_digestbyobj(o); }
#endif
