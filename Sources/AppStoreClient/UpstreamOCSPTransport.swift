import AppStoreDomain
import SignedData

/// Online checks' OCSP requests over the gateway's libcurl client (RFC 6960 appendix A: POST, DER body).
/// Only URLs from certificates whose chain to a configured root has been validated ever reach here.
package struct UpstreamOCSPTransport: OCSPTransport {
    let http: UpstreamHTTPClient
    let timeout: Duration

    /// Requests through `http`, each bounded by `timeout`.
    package init(http: UpstreamHTTPClient, timeout: Duration) {
        self.http = http
        self.timeout = timeout
    }

    package func post(_ request: [UInt8], to url: String) async -> OCSPTransportResult {
        guard url.hasPrefix("http://") || url.hasPrefix("https://") else { return .unreachable("not an http(s) URL") }
        let upstream = UpstreamRequest(
            method: .post, url: url,
            headers: [("Content-Type", "application/ocsp-request"), ("Accept", "application/ocsp-response")],
            body: request, timeout: timeout)
        do {
            let response = try await http.send(upstream)
            guard response.status == 200 else { return .unreachable("HTTP \(response.status) from \(url)") }
            return .answered(response.body)
        } catch {
            return .unreachable("\(error) (\(url))")
        }
    }
}
