import Testing

@testable import Postgres

/// Decoding one cell's text form, as a server (or something posing as one) sends it.
struct PostgresCellTests {
    private func bytea(_ text: String) -> PostgresCell {
        PostgresCell(
            column: PostgresColumn(name: "b", typeOID: PostgresType.bytea), bytes: ArraySlice(Array(text.utf8)),
            label: "b")
    }

    @Test func byteaInHexFormDecodesAnyBytes() throws {
        #expect(try bytea("\\x").data() == [])
        #expect(try bytea("\\x00ff7F80aB").data() == [0x00, 0xFF, 0x7F, 0x80, 0xAB])
        let every = (0...255).map { UInt8($0) }
        let digits = Array("0123456789abcdef")
        let text = "\\x" + String(every.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
        #expect(try bytea(text).data() == every)
    }

    @Test func byteaThatIsNotHexFailsAsDecoding() {
        for text in ["", "\\", "x00", "\\y00", "\\x0", "\\x0g", "\\xg0", "\\x00 1", "\\x\u{00e9}"] {
            #expect(throws: PostgresError.self, "\(text.debugDescription)") { try bytea(text).data() }
        }
    }
}
