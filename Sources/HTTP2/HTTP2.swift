/// A generic HTTP/2 server on epoll event loops and nghttp2 sessions.
public enum HTTP2 {}
