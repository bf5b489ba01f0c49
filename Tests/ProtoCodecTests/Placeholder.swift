import Testing
@testable import ProtoCodec

@Test func moduleLoads() {}
