import Postgres
import Testing

/// Connection strings: libpq parses both forms, the description never shows a password, bad ones are typed errors.
@Suite struct PostgresConfigurationTests {
    @Test func aURIsPasswordIsHiddenInItsDescription() throws {
        let configuration = try PostgresConfiguration(
            "postgresql://gateway:s3cr%40t@db.example:6543/app?sslmode=verify-full&sslrootcert=/etc/ca.pem")
        #expect(configuration["password"] == "s3cr@t")
        #expect(configuration["host"] == "db.example")
        #expect(configuration["port"] == "6543")
        #expect(configuration["sslmode"] == "verify-full")
        let text = configuration.description
        #expect(!text.contains("s3cr"))
        #expect(text.contains("password=***"))
        #expect(text.contains("host=db.example"))
        #expect(text.contains("sslrootcert=/etc/ca.pem"))
    }
}
