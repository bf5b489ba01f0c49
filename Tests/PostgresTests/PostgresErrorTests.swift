import Testing

@testable import Postgres

/// What an error value says about itself: which server errors a caller may mend by retrying.
struct PostgresErrorTests {
    private func server(_ sqlState: String, _ message: String, routine: String?) -> PostgresError {
        PostgresError(.server, message, sqlState: sqlState, sourceFunction: routine)
    }

    @Test func aStalePlanIsTheFeatureErrorOfThePlanCacheOnly() {
        let stale = "cached plan must not change result type"
        #expect(server("0A000", stale, routine: "RevalidateCachedQuery").isStalePlan)
        // A server that translates its messages still names the routine.
        #expect(
            server(
                "0A000", "le plan en cache ne doit pas modifier le type de résultat", routine: "RevalidateCachedQuery"
            ).isStalePlan)
        // Another unsupported feature shares the SQLSTATE: it is not mended by preparing again.
        #expect(
            !server("0A000", "FOR UPDATE is not allowed with aggregate functions", routine: "CheckSelectLocking")
                .isStalePlan)
        #expect(!server("0A000", stale, routine: "transformLockingClause").isStalePlan)
        // An error that names no routine is not taken for a stale plan by its text.
        #expect(!server("0A000", stale, routine: nil).isStalePlan)
        #expect(!server("0A000", "FOR UPDATE is not allowed with aggregate functions", routine: nil).isStalePlan)
        #expect(!server("42P01", stale, routine: "RevalidateCachedQuery").isStalePlan)
    }
}
