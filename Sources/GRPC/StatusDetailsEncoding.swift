import ProtoCodec

/// Encodes `RPCStatus.details` as a serialized google.rpc.Status for `grpc-status-details-bin`
/// (gRPC "richer error model"): ErrorInfo, RetryInfo and BadRequest packed in `google.protobuf.Any`.
enum StatusDetailsEncoding {
    static func encode(_ status: RPCStatus) -> [UInt8]? {
        guard let details = status.details else { return nil }
        var message = GoogleRPCStatus()
        message.code = Int32(status.code.rawValue)
        message.message = status.message
        if let info = details.info {
            let errorInfo = ErrorInfo(reason: info.reason, domain: info.domain, metadata: info.metadata)
            message.details.append(
                ProtoAny(
                    typeUrl: "type.googleapis.com/google.rpc.ErrorInfo", value: errorInfo.serializedBytes()))
        }
        if let delay = details.retryDelayMilliseconds {
            let retryInfo = RetryInfo(retryDelay: ProtoDuration(milliseconds: max(0, delay)))
            message.details.append(
                ProtoAny(
                    typeUrl: "type.googleapis.com/google.rpc.RetryInfo", value: retryInfo.serializedBytes()))
        }
        if !details.fieldViolations.isEmpty {
            let badRequest = BadRequest(
                fieldViolations: details.fieldViolations.map {
                    BadRequestFieldViolation(field: $0.field, description: $0.description)
                })
            message.details.append(
                ProtoAny(
                    typeUrl: "type.googleapis.com/google.rpc.BadRequest", value: badRequest.serializedBytes()))
        }
        return message.serializedBytes()
    }
}
