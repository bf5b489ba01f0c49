import ProtoCodec
import Testing

@Suite struct ReflectionAndAnyTests {
    @Test func anyPacksAndUnpacksByTypeURL() throws {
        let info = ErrorInfo(reason: "RATE_LIMIT_EXCEEDED", domain: "appstore.gateway")
        let any = ProtoAny(packing: info)
        #expect(any.typeUrl == "type.googleapis.com/google.rpc.ErrorInfo")
        #expect(try any.unpack(as: ErrorInfo.self) == info)
        #expect(try any.unpack(as: RetryInfo.self) == nil)
        #expect(GoogleRPCStatus.protoMessageName == "google.rpc.Status")
        #expect(AppStoreNotification.protoMessageName == "appstore.gateway.v1.Notification")
    }

    @Test func everyServedSymbolHasAFile() throws {
        let symbols = [
            "appstore.gateway.v1.AppStoreGateway", "appstore.gateway.v1.AppStoreGateway.VerifyJWS",
            "appstore.gateway.v1.Transaction", "appstore.gateway.v1.NotificationType", "grpc.health.v1.Health",
            "grpc.health.v1.HealthCheckResponse.ServingStatus", "google.rpc.Status",
        ]
        for symbol in symbols {
            #expect(ProtoFileDescriptor.file(containingSymbol: symbol) != nil, "\(symbol)")
        }
        #expect(ProtoFileDescriptor.file(containingSymbol: "appstore.gateway.v1.Nope") == nil)
        let gateway = try #require(ProtoFileDescriptor.file(named: "appstore/gateway/v1/gateway.proto"))
        #expect(gateway.symbols.contains("appstore.gateway.v1.AppStoreGateway.StreamNotifications"))
    }

    @Test func dependenciesResolveAndBytesStartWithTheFileName() {
        for file in ProtoFileDescriptor.all {
            for dependency in file.dependencies {
                #expect(ProtoFileDescriptor.file(named: dependency) != nil, "\(file.name) -> \(dependency)")
            }
            // FileDescriptorProto field 1 (name): tag 0x0A, length, then the name's UTF-8.
            let name = Array(file.name.utf8)
            #expect(Array(file.serializedBytes.prefix(2 + name.count)) == [0x0A, UInt8(name.count)] + name)
        }
    }
}
