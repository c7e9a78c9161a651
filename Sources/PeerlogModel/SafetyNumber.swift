import PeerlogCrypto

/// A short, human-comparable digest of two identities' public keys. Order-independent, so
/// both people see the same number.
///
/// Format (docs/PROTOCOL.md §Safety numbers): SHA-512 over `"peerlog/safety-number/v1" ‖ 0x00 ‖
/// min(a, b) ‖ max(a, b)` (keys compared bytewise); the first 60 bytes, as 12 big-endian 40-bit
/// chunks, each reduced mod 100000 and written as 5 digits: 60 digits in 12 groups.
public struct SafetyNumber: Hashable, Sendable, CustomStringConvertible {
    /// The domain-separation string hashed before the keys (docs/PROTOCOL.md §6).
    public static let context = "peerlog/safety-number/v1"
    /// The twelve groups of five decimal digits, leading zeros kept.
    public let groups: [String]

    /// The safety number of identities `a` and `b`, the same in either order (docs/PROTOCOL.md §6).
    public init(_ a: IdentityID, _ b: IdentityID) {
        let (lo, hi) = a < b ? (a, b) : (b, a)
        let digest = SHA512.hash(Array(Self.context.utf8) + [0] + lo.bytes + hi.bytes)
        groups = (0..<12).map { i in
            let chunk = digest[(i * 5)..<(i * 5 + 5)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            let s = String(chunk % 100_000)
            return String(repeating: "0", count: 5 - s.count) + s
        }
    }

    /// Twelve groups of five digits separated by spaces.
    public var description: String { groups.joined(separator: " ") }
    /// Three lines of four groups, for reading aloud.
    public var lines: [String] { stride(from: 0, to: 12, by: 4).map { groups[$0..<$0 + 4].joined(separator: " ") } }
}
