/// Whether this build can use a PostgreSQL store (`swift build --traits PostgreSQL`).
public enum RelayPostgres {
    #if PostgreSQL
    /// True: built with the PostgreSQL trait.
    public static let available = true
    #else
    /// False: built without the PostgreSQL trait; `peerlog relay --postgres` then fails.
    public static let available = false
    #endif
}
