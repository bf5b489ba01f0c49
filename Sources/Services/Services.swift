/// The gateway services.
public enum Services {}
