internal import CGatewayProtos
/// Swift value types for the proto messages, encoded and decoded with protobuf-c.
public enum ProtoCodec {}
