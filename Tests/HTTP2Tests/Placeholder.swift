import Testing
@testable import HTTP2

@Test func moduleLoads() {}
