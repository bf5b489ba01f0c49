/// Limits and timers of the HTTP/2 server. Where a value is a configuration key of the gRPC port, its default
/// here is that key's documented default; the gateway's other ports (webhook, admin) set their own.
public struct HTTP2Configuration: Sendable, Hashable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised to each client.
    public var maxConcurrentStreams: UInt32 = 256
    /// SETTINGS_INITIAL_WINDOW_SIZE: how much a client may send on a stream before we consume it.
    public var initialWindowSize: UInt32 = 1 << 20
    /// SETTINGS_MAX_HEADER_LIST_SIZE; a request with larger headers is refused (HTTP 431).
    public var maxHeaderListSize: UInt32 = 16 * 1024
    /// A connection with no open stream for this long is closed with GOAWAY "max_idle"; nil: never.
    public var idleTimeout: Duration? = .seconds(300)
    /// A connection that has received nothing for this long gets a PING; nil: never.
    public var keepaliveTime: Duration? = .seconds(120)
    /// A PING not acknowledged within this long closes the connection.
    public var keepaliveTimeout: Duration = .seconds(20)
    /// A connection is closed gracefully (GOAWAY "max_age") after this long, each connection's age drawn
    /// within ±10 % so clients do not reconnect all at once (gRFC A9), and load balancers see new connections;
    /// nil: never.
    public var maxConnectionAge: Duration? = .seconds(1_800)
    /// After "max_age", calls in flight may run this long before the connection is closed.
    public var maxConnectionAgeGrace: Duration = .seconds(300)
    /// Client PINGs closer together than this count as strikes (grpc keepalive.md "enforcement").
    public var minClientPingInterval: Duration = .seconds(300)
    /// Whether client PINGs on a connection without calls are allowed at all.
    public var permitClientPingWithoutCalls = false
    /// Strikes tolerated before GOAWAY ENHANCE_YOUR_CALM "too_many_pings".
    public var maxPingStrikes = 2
    /// How long the first GOAWAY of a graceful close waits for the PING that confirms it (RFC 9113 §6.8).
    public var goawayPingTimeout: Duration = .seconds(1)
    /// RST_STREAM frames a client may send for streams the server has not answered yet before its connection
    /// ends with GOAWAY ENHANCE_YOUR_CALM "too_many_resets" (rapid reset, CVE-2023-44487; `ResetBudget`).
    /// Resets of answered streams (a gRPC client cancelling a server stream) are never counted. nil: no limit.
    public var unansweredResetLimit: UnansweredResetLimit? = UnansweredResetLimit(burst: 1_000, perSecond: 200)
    /// Response bytes buffered per stream above which producers wait (`HTTP2Stream.bufferedBytes`).
    public var streamWriteHighWatermark: Int = 256 * 1024
    /// Bytes of encoded frames a connection buffers for the socket before it stops asking nghttp2 for more.
    public var connectionWriteBufferLimit: Int = 1 << 20
    /// Request bytes one connection may hold before it stops granting flow-control window (`ReceiveLedger`).
    public var maxBufferedBytesPerConnection: Int = 8 << 20
    /// Request bytes all connections of the server may hold together before they stop granting window.
    public var maxBufferedBytes: Int = 64 << 20
    /// Open connections across the server's loops; at the cap the listeners stop accepting. 0 = no cap.
    /// Connections still in their handshake (`handshakeTimeout`) do not count here.
    public var maxConnections: Int = 10_000
    /// A connection must finish its TLS handshake and, for HTTP/2, send the client preface (RFC 9113 §3.4)
    /// within this long of being accepted, or it is closed. HTTP/1.1 connections are established once TLS is
    /// done (their request-head deadline, `http1.headerTimeout`, bounds the rest). nil: no deadline.
    public var handshakeTimeout: Duration? = .seconds(10)
    /// Connections in their handshake across the server's loops; at the cap the listeners stop accepting
    /// until one finishes or its deadline closes it. 0 = no cap.
    public var maxPendingHandshakes: Int = 1_024
    /// Connections in their handshake from one client address (IPv6: one /64) across the server's loops; the
    /// next one from that address closes its oldest pending one, so one address never fills
    /// `maxPendingHandshakes` nor pauses the listener. 0 = no limit.
    public var maxPendingHandshakesPerAddress: Int = 32
    /// An HTTP/2 connection that has made no admitted call (`HTTPServerStream.admitConnection`) this long after
    /// its client preface is closed with GOAWAY "unauthenticated_idle": at once without open streams, else
    /// gracefully, its calls cut off after as long again; nil: never.
    public var unauthenticatedIdleTimeout: Duration? = .seconds(10)
    /// A request's header block (HEADERS and its CONTINUATIONs) must be received in full this long after it
    /// began, or the connection is closed (GOAWAY "header_block_timeout"): meanwhile HTTP/2 lets nothing else
    /// through, and the stream it opened would keep the connection from its idle timeout.
    public var headerBlockTimeout: Duration = .seconds(5)
    /// Limits of HTTP/1.1 connections (the admin endpoint, the simulator's HTTP/1.1 clients).
    public var http1 = HTTP1Limits()

    public init() {}
}

/// What an HTTP/1.1 connection accepts, and how long it waits.
public struct HTTP1Limits: Sendable, Hashable {
    /// Largest request head (request line and headers); larger → 431 and close.
    public var maxHeadBytes = 64 * 1024
    /// Largest request body; a larger Content-Length → 413 and close. 0 refuses every body.
    public var maxBodyBytes = 1 << 20
    /// Methods served; others get 405 and the connection closes. Empty = any.
    public var allowedMethods: Set<String> = []
    /// A request head must be complete this long after its first byte (or after the connection opened);
    /// nil: no deadline.
    public var headerTimeout: Duration? = .seconds(30)
    /// A keep-alive connection without a request in progress is closed after this long; nil: never.
    public var idleTimeout: Duration? = .seconds(120)

    public init() {}
}
