import Foundation
import PeerlogNode

/// Who may use the status server (docs/TOOLS.md#status-page): without a token it binds only
/// loopback addresses; with one, every request must carry it, as `Authorization: Bearer TOKEN`
/// or `?token=TOKEN` (the page passes it on to its own requests; `EventSource` cannot set
/// headers).
public struct HTTPAccess: Sendable, Equatable {
    /// The token every request must carry; nil: none needed (loopback only).
    public let token: String?

    /// The shortest token accepted: a guessable one would open the node's status to the LAN.
    public static let minTokenLength = 16
    /// The longest token accepted (it travels in a header and a URL).
    public static let maxTokenLength = 256

    /// Checks the bind address against the token: a non-loopback address needs a token, and a
    /// token must be 16...256 printable ASCII characters without spaces.
    public init(address: PeerAddress, token: String?) throws(HTTPAccessError) {
        if let token {
            guard (Self.minTokenLength...Self.maxTokenLength).contains(token.utf8.count),
                token.utf8.allSatisfy({
                    (0x21...0x7e).contains($0) && $0 != UInt8(ascii: "&") && $0 != UInt8(ascii: "#")
                })
            else { throw .badToken }
        } else if !Self.isLoopback(address.host) {
            throw .tokenRequired(address.host)
        }
        self.token = token
    }

    /// Whether the request may be answered: no token configured, or the header or the query
    /// carries it (compared in constant time).
    public func allows(authorization: String?, query: String?) -> Bool {
        guard let token else { return true }
        if let authorization, authorization.hasPrefix("Bearer "),
            Self.constantTimeEqual(String(authorization.dropFirst(7)), token)
        {
            return true
        }
        // Percent-decoded: the page passes the token through encodeURIComponent.
        for pair in (query ?? "").split(separator: "&") where pair.hasPrefix("token=") {
            let value = String(pair.dropFirst(6))
            if Self.constantTimeEqual(value.removingPercentEncoding ?? value, token) { return true }
        }
        return false
    }

    /// `127.0.0.0/8`, `::1` and `localhost`: the addresses only this machine reaches.
    public static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    private static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for i in x.indices { difference |= x[i] ^ y[i] }
        return difference == 0
    }
}

/// Why `--http` settings were refused.
public enum HTTPAccessError: Error, Equatable, CustomStringConvertible {
    /// A non-loopback address was given without a token.
    case tokenRequired(String)
    /// The token is too short, too long, or has characters a URL or header would mangle.
    case badToken

    /// One line for the CLI, saying what to do.
    public var description: String {
        switch self {
        case .tokenRequired(let host):
            "--http \(host) is not a loopback address: anyone on the network could read this node's status; "
                + "give --http-token TOKEN (every request must then carry it) or bind 127.0.0.1"
        case .badToken:
            "--http-token must be \(HTTPAccess.minTokenLength)...\(HTTPAccess.maxTokenLength) printable ASCII "
                + "characters without spaces, & or # (try: openssl rand -hex 16)"
        }
    }
}
