import GatewayFoundation
import HTTPServer

/// The trailer fields that carry a call's status (PROTOCOL-HTTP2.md "Trailers").
enum StatusTrailers {
    /// `:status 200` and the gRPC content type: the head of every gRPC response.
    static let responseHead: [(name: String, value: String)] = [
        (":status", "200"), ("content-type", "application/grpc"),
    ]
    /// `grpc-status: 0` alone, the trailer of nearly every successful call.
    static let ok: [(name: String, value: String)] = [("grpc-status", "0")]

    /// The trailers for `status`: `ok`, the block a loop keeps for a plain OK, or one made for it.
    static func block(for status: RPCStatus, ok: HeaderBlock) -> HeaderBlock {
        if status.code == .ok && status.message.isEmpty { return ok }
        return HeaderBlock(fields(for: status))
    }

    /// A Trailers-Only response (a head that is the whole response) for `status`.
    static func trailersOnly(for status: RPCStatus) -> HeaderBlock {
        HeaderBlock(responseHead + fields(for: status))
    }

    static func fields(for unbounded: RPCStatus) -> [(name: String, value: String)] {
        let status = TrailerBounds.bounded(unbounded)  // every status must fit the client's header limits
        var fields = [(name: "grpc-status", value: String(status.code.rawValue))]
        if !status.message.isEmpty {
            fields.append(("grpc-message", StatusMessageEncoding.encode(status.message)))
        }
        if status.code != .ok, let details = StatusDetailsEncoding.encode(status) {
            // -bin metadata is base64; emitted unpadded, as the spec recommends.
            fields.append(("grpc-status-details-bin", Base64.encode(details, variant: .standardUnpadded)))
        }
        return fields
    }
}
