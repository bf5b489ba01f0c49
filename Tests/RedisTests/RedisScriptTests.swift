import Testing

@testable import Redis

@Suite struct RedisScriptTests {
    @Test func aScriptIsCalledByTheSHA1OfItsSource() {
        let script = RedisScript("return 1")
        // sha1("return 1"), as `SCRIPT LOAD "return 1"` answers it.
        #expect(script.sha == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
        #expect(script.call(["0", "x"]) == ["EVALSHA", script.sha, "0", "x"])
    }

    @Test func noScriptIsTheErrorCodeNotTheMessage() {
        #expect(RedisReply.error("NOSCRIPT No matching script. Please use EVAL.").isNoScript)
        #expect(!RedisReply.error("ERR NOSCRIPT was mentioned").isNoScript)
        #expect(!RedisReply.error("NOSCRIPTS").isNoScript)
        #expect(!RedisReply.status("NOSCRIPT").isNoScript)
    }
}
