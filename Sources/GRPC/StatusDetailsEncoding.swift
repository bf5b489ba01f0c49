import GatewayCore

/// Encodes `RPCStatus.details` as a serialized google.rpc.Status for `grpc-status-details-bin`.
enum StatusDetailsEncoding {
    static func encode(_ status: RPCStatus) -> [UInt8]? {
        guard status.details != nil else { return nil }
        return nil  // filled in with the generated google.rpc codec
    }
}
