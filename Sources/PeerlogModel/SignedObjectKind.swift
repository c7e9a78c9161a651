import PeerlogEncoding

/// Which signed object a container is, by its top-level key (docs/PROTOCOL.md §3): a
/// receipt, a sequencer envelope, a device certificate or a device revocation (§3.6). For tools
/// that read a file without knowing what it holds (`peerlog inspect`).
public enum SignedObjectKind: String, Sendable, CaseIterable {
    case receipt, envelope, certificate, revocation

    /// The kind of the decoded container `value`; nil when it is none of them (`keys` says
    /// what it holds). When a map holds several of the keys, the first in this order wins.
    public init?(container value: CBOR) {
        let keys = Self.keys(of: value)
        guard let kind = Self.allCases.first(where: { keys.contains($0.rawValue) }) else { return nil }
        self = kind
    }

    /// The text keys at the top level of `value` (none when it is not a map).
    public static func keys(of value: CBOR) -> Set<String> {
        Set(value.mapValue?.keys.compactMap(\.textValue) ?? [])
    }
}
