/// gRPC over the HTTP/2 server.
public enum GRPC {}
