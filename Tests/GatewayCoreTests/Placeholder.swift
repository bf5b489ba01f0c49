import Testing
@testable import GatewayCore

@Test func moduleLoads() {}
