#if PostgreSQL
import Foundation
import PostgresNIO

/// `postgres://user[:password]@host[:port]/database` → a client configuration (no TLS: the
/// relay's database is expected on loopback or a private network).
enum PostgresURL {
    static func configuration(_ text: String) throws -> PostgresClient.Configuration {
        guard let url = URLComponents(string: text), let scheme = url.scheme else {
            throw RelayStoreError(
                "the PostgreSQL address is not a URL (expected postgres://user@host:port/database)", code: .invalidURL)
        }
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw RelayStoreError(
                "the URL scheme must be postgres:// or postgresql://, not \(scheme)://", code: .invalidURL)
        }
        guard let user = url.user, !user.isEmpty else {
            throw RelayStoreError("the URL names no user (postgres://USER@host/database)", code: .invalidURL)
        }
        let database = String(url.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else {
            throw RelayStoreError("the URL names no database (postgres://user@host/DATABASE)", code: .invalidURL)
        }
        let port = url.port ?? 5432
        guard (1...65535).contains(port) else {
            throw RelayStoreError("port \(port) is out of range", code: .invalidURL)
        }
        return PostgresClient.Configuration(
            host: url.host ?? "127.0.0.1", port: port, username: user, password: url.password, database: database,
            tls: .disable)
    }
}
#endif
