// OpenSSL's process-wide set-up, once, before `main` and before any library (libcurl, libpq, hiredis) initialises
// OpenSSL itself: whichever initialisation comes first decides it for the process.
//
// OPENSSL_INIT_NO_ATEXIT: OpenSSL would otherwise free its global state in an `atexit` handler while other threads
// of the process (event loops doing TLS, libcurl's and libpq's threads) may still be using it, and a thread that
// ends after that handler no longer frees its own per-thread state (its error queue, its random generators): the
// memory is the operating system's to reclaim when the process ends, so nothing is torn down under a live thread.
#include "shim.h"

__attribute__((constructor)) static void copenssl_startup(void) { OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL); }
