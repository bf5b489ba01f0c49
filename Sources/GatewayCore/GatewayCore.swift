/// The gateway's C-free core: configuration, errors and their gRPC status, time, rate limiting.
public enum GatewayCore {}
