/// Whether this build can use a PostgreSQL store (`swift build --traits PostgreSQL`).
public enum RelayPostgres {
    #if PostgreSQL
    public static let available = true
    #else
    public static let available = false
    #endif
}
