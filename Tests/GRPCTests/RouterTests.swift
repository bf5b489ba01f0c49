import Testing

@testable import GRPC

@Suite struct RouterTests {
    @Test func grpcContentTypesAreTheBaseTypeAndItsForms() {
        for accepted in ["application/grpc", "application/grpc+proto", "application/grpc+json", "application/grpc;x=y"]
        {
            #expect(Router.isGRPC(contentType: accepted), "\(accepted)")
        }
        for refused in ["", "application/json", "application/grp", "Application/grpc", "text/application/grpc"] {
            #expect(!Router.isGRPC(contentType: refused), "\(refused)")
        }
    }

    @Test func transportFieldsAreNotTheCallersMetadata() {
        for name in ["grpc-timeout", "grpc-accept-encoding", "grpc-", "content-type", "te", "user-agent"] {
            #expect(Router.isTransportField(name), "\(name)")
        }
        for name in ["authorization", "x-request-id", "traceparent", "grpc", "xgrpc-timeout", "tea", "user-agents"] {
            #expect(!Router.isTransportField(name), "\(name)")
        }
    }
}
