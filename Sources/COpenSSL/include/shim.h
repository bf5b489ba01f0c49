// OpenSSL 3 for Swift: typed wrappers for the function-like macros Swift cannot import.
#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
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
#include <arpa/inet.h>

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
/// A public key of `type` ("RSA", "EC") built by EVP_PKEY_fromdata from `params`; NULL if OpenSSL refuses it.
static inline EVP_PKEY *copenssl_public_key_fromdata(const char *type, OSSL_PARAM *params) {
    EVP_PKEY *key = NULL;
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (ctx == NULL) return NULL;
    if (EVP_PKEY_fromdata_init(ctx) != 1 || EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = NULL;
    EVP_PKEY_CTX_free(ctx);
    return key;
}
/// An RSA public key from its big-endian modulus and exponent (OSSL_PARAM keeps pointers to the parameter
/// names and values until the key is built, so the whole build happens here).
static inline EVP_PKEY *copenssl_rsa_public_key(const unsigned char *n, size_t n_len, const unsigned char *e,
                                                 size_t e_len) {
    BIGNUM *modulus = BN_bin2bn(n, (int)n_len, NULL), *exponent = BN_bin2bn(e, (int)e_len, NULL);
    OSSL_PARAM params[3] = {OSSL_PARAM_END, OSSL_PARAM_END, OSSL_PARAM_END};
    unsigned char *n_native = NULL, *e_native = NULL;
    EVP_PKEY *key = NULL;
    size_t n_size = n_len + 1, e_size = e_len + 1;
    if (modulus == NULL || exponent == NULL) goto done;
    n_native = OPENSSL_zalloc(n_size);
    e_native = OPENSSL_zalloc(e_size);
    if (n_native == NULL || e_native == NULL) goto done;
    if (BN_bn2nativepad(modulus, n_native, (int)n_size) < 0 || BN_bn2nativepad(exponent, e_native, (int)e_size) < 0)
        goto done;
    params[0] = OSSL_PARAM_construct_BN(OSSL_PKEY_PARAM_RSA_N, n_native, n_size);
    params[1] = OSSL_PARAM_construct_BN(OSSL_PKEY_PARAM_RSA_E, e_native, e_size);
    key = copenssl_public_key_fromdata("RSA", params);
done:
    BN_free(modulus);
    BN_free(exponent);
    OPENSSL_free(n_native);
    OPENSSL_free(e_native);
    return key;
}
/// An EC public key on the named curve from its encoded point.
static inline EVP_PKEY *copenssl_ec_public_key(const char *group, const unsigned char *point, size_t point_len) {
    OSSL_PARAM params[3] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, (char *)group, 0),
        OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, (void *)point, point_len), OSSL_PARAM_END};
    return copenssl_public_key_fromdata("EC", params);
}
/// TLS session tickets (RFC 5077, RFC 8446 §4.6.1) with the server's own rotating keys: the callback type of
/// SSL_CTX_set_tlsext_ticket_key_evp_cb, a macro over SSL_CTX_callback_ctrl.
typedef int (*copenssl_ticket_key_cb)(SSL *ssl, unsigned char *key_name, unsigned char *iv, EVP_CIPHER_CTX *cipher,
                                      EVP_MAC_CTX *mac, int encrypt);
static inline long copenssl_SSL_CTX_set_ticket_key_cb(SSL_CTX *ctx, copenssl_ticket_key_cb cb) {
    return SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, cb);
}
/// Keys a ticket's HMAC-SHA256 (the OSSL_PARAM array naming the digest is a macro-built C array).
static inline int copenssl_ticket_mac_init(EVP_MAC_CTX *mac, const unsigned char *key, size_t length) {
    OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
                           OSSL_PARAM_construct_end()};
    return EVP_MAC_init(mac, key, length, params);
}
/// Whether `error` is PEM's "no start line": the end of a PEM input read certificate by certificate.
static inline int copenssl_ERR_is_pem_end_of_input(unsigned long error) {
    return ERR_GET_LIB(error) == ERR_LIB_PEM && ERR_GET_REASON(error) == PEM_R_NO_START_LINE;
}
static inline long copenssl_SSL_CTX_sess_set_cache_size(SSL_CTX *ctx, long size) {
    return SSL_CTX_sess_set_cache_size(ctx, size);
}
static inline int copenssl_SSL_CTX_get_ex_new_index(CRYPTO_EX_free *free_function) {
    return SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, free_function);
}
/// A TLS client's expected server: the certificate must name `host`, a DNS name (SNI sent, wildcards only
/// as a whole left-most label) or an IP address literal (matched against IP SANs; no SNI, RFC 6066 forbids
/// literals). 1 on success.
static inline int copenssl_SSL_expect_host(SSL *ssl, const char *host) {
    unsigned char address[16];
    X509_VERIFY_PARAM *param = SSL_get0_param(ssl);
    if (inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1) {
        return X509_VERIFY_PARAM_set1_ip_asc(param, host);
    }
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    return X509_VERIFY_PARAM_set1_host(param, host, 0) == 1 && SSL_set_tlsext_host_name(ssl, host) == 1;
}
#endif
