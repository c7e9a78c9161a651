/// A peer to dial: `HOST:PORT`, `[IPv6]:PORT`.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    /// A host name or an IP address (an IPv6 one without brackets).
    public let host: String
    /// The TCP port: 1...65535 to dial, 0...65535 to listen (0: any free port).
    public let port: Int

    /// An address as given, not checked (`init(parsing:listening:)` checks).
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` or `[V6ADDR]:PORT`; the port must be 1...65535 (0 too for a listen
    /// address, where it means "any free port").
    public init(parsing text: String, listening: Bool = false) throws {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw NodeError.invalidAddress(text, "expected [IPV6]:PORT")
            }
            host = text[text.index(after: text.startIndex)..<close]
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else {
                throw NodeError.invalidAddress(text, "expected HOST:PORT (IPv6 addresses in brackets)")
            }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !host.isEmpty else { throw NodeError.invalidAddress(text, "empty host") }
        guard let port = Int(portText), ((listening ? 0 : 1)...65535).contains(port) else {
            throw NodeError.invalidAddress(text, listening ? "port must be 0...65535" : "port must be 1...65535")
        }
        self.init(host: String(host), port: port)
    }

    /// `HOST:PORT`, or `[HOST]:PORT` when the host contains a colon (IPv6): what `init(parsing:)`
    /// reads back.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
