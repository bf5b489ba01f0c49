/* The store reads one GetSubscription needs, and nothing else: for ids drawn at random from those state-seed
 * stored, the record row and its current ledger row, every column the gateway reads, with the statements the
 * gateway's read connection prepares (SQLiteSubscriptionTables.currentRecord) and one read transaction per read.
 * No decoding, no answer, no thread hop: the floor under a GetSubscription answered from SQLite on this machine.
 *
 *   sqlite_reads DB COUNT FIRST_ID SECONDS
 *
 * Prints "reads N seconds S per_read_us U bytes B" (B: the bytes read a record, on average). One thread, the
 * connection read-only with SQLite's default page cache, as the gateway's. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void check(int rc, sqlite3 *db, const char *what) {
    if (rc != SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) {
        fprintf(stderr, "sqlite_reads: %s: %s\n", what, sqlite3_errmsg(db));
        exit(1);
    }
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
    sqlite3_stmt *statement = NULL;
    check(sqlite3_prepare_v2(db, sql, -1, &statement, NULL), db, sql);
    return statement;
}

static volatile unsigned char sink;

/* Bytes of every column of the current row (each column's bytes asked for, as the gateway asks). */
static size_t touch(sqlite3_stmt *statement) {
    size_t total = 0;
    for (int column = 0; column < sqlite3_column_count(statement); column++) {
        const unsigned char *bytes = sqlite3_column_blob(statement, column);
        int count = sqlite3_column_bytes(statement, column);
        if (bytes && count > 0) {
            sink ^= bytes[count - 1];
            total += (size_t)count;
        }
    }
    return total;
}

static void step_reset(sqlite3 *db, sqlite3_stmt *statement) {
    check(sqlite3_step(statement), db, "step");
    sqlite3_reset(statement);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: sqlite_reads DB COUNT FIRST_ID SECONDS\n");
        return 2;
    }
    long long count = atoll(argv[2]), first = atoll(argv[3]);
    double seconds = atof(argv[4]);
    if (count <= 0 || seconds <= 0) {
        fprintf(stderr, "sqlite_reads: COUNT and SECONDS must be positive\n");
        return 2;
    }
    sqlite3 *db = NULL;
    check(sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL), db, "open");
    char bundle[256] = "", environment[64] = "";
    sqlite3_stmt *any = prepare(db, "SELECT bundle_id, environment FROM subscription_records LIMIT 1");
    if (sqlite3_step(any) != SQLITE_ROW) {
        fprintf(stderr, "sqlite_reads: no records\n");
        return 1;
    }
    const unsigned char *found_bundle = sqlite3_column_text(any, 0), *found_environment = sqlite3_column_text(any, 1);
    snprintf(bundle, sizeof bundle, "%s", found_bundle ? (const char *)found_bundle : "");
    snprintf(environment, sizeof environment, "%s", found_environment ? (const char *)found_environment : "");
    sqlite3_finalize(any);
    if (getenv("MMAP_SIZE")) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA mmap_size=%lld", atoll(getenv("MMAP_SIZE")));
        check(sqlite3_exec(db, pragma, NULL, NULL, NULL), db, pragma);
    }
    if (getenv("CACHE_KIB")) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA cache_size=-%lld", atoll(getenv("CACHE_KIB")));
        check(sqlite3_exec(db, pragma, NULL, NULL, NULL), db, pragma);
    }

    sqlite3_stmt *begin = prepare(db, "BEGIN"), *commit = prepare(db, "COMMIT");
    /* STAMP_ONLY: the record row's small columns alone, no ledger row (the least any read of a record costs). */
    int stamp_only = getenv("STAMP_ONLY") != NULL;
    sqlite3_stmt *record = prepare(db, stamp_only
        ? "SELECT current_transaction_id, version, updated_at FROM subscription_records "
          "WHERE bundle_id = ?1 AND environment = ?2 AND original_transaction_id = ?3"
        : "SELECT current_transaction_id, version, updated_at, source, renewal_jws, renewal_payload "
          "FROM subscription_records WHERE bundle_id = ?1 AND environment = ?2 AND original_transaction_id = ?3");
    sqlite3_stmt *ledger = prepare(db,
        "SELECT transaction_id, jws, payload FROM subscription_transactions WHERE bundle_id = ?1 AND "
        "environment = ?2 AND original_transaction_id = ?3 AND transaction_id = ?4");
    uint64_t state = 46;
    long long reads = 0;
    size_t bytes = 0;
    double start = now_seconds(), elapsed = 0;
    char id[32], current[256];
    while (elapsed < seconds) {
        for (int i = 0; i < 256; i++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            snprintf(id, sizeof id, "%lld", first + (long long)((state >> 33) % (uint64_t)count));
            step_reset(db, begin);
            sqlite3_bind_text(record, 1, bundle, -1, SQLITE_STATIC);
            sqlite3_bind_text(record, 2, environment, -1, SQLITE_STATIC);
            sqlite3_bind_text(record, 3, id, -1, SQLITE_STATIC);
            current[0] = 0;
            if (sqlite3_step(record) == SQLITE_ROW) {
                const unsigned char *id_text = sqlite3_column_text(record, 0);
                snprintf(current, sizeof current, "%s", id_text ? (const char *)id_text : "");
                bytes += touch(record);
            }
            sqlite3_reset(record);
            if (stamp_only) {
                step_reset(db, commit);
                reads++;
                continue;
            }
            sqlite3_bind_text(ledger, 1, bundle, -1, SQLITE_STATIC);
            sqlite3_bind_text(ledger, 2, environment, -1, SQLITE_STATIC);
            sqlite3_bind_text(ledger, 3, id, -1, SQLITE_STATIC);
            sqlite3_bind_text(ledger, 4, current, -1, SQLITE_STATIC);
            if (sqlite3_step(ledger) == SQLITE_ROW) bytes += touch(ledger);
            sqlite3_reset(ledger);
            step_reset(db, commit);
            reads++;
        }
        elapsed = now_seconds() - start;
    }
    printf("reads %lld seconds %.2f per_read_us %.2f bytes %zu\n", reads, elapsed, elapsed * 1e6 / (double)reads,
        bytes / (size_t)(reads ? reads : 1));
    sqlite3_finalize(begin);
    sqlite3_finalize(commit);
    sqlite3_finalize(record);
    sqlite3_finalize(ledger);
    sqlite3_close(db);
    return 0;
}
