import Testing
@testable import GRPC

@Test func moduleLoads() {}
