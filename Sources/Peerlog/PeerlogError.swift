/// Why a facade call failed: a kind an app can switch on, and one sentence for people.
public struct PeerlogError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// The home folder has no identity and `create` was false, or cannot be created.
        case home
        /// No group with that id or name is held here.
        case unknownGroup
        /// The group's rules (as this replica sees them) refuse the write.
        case refused
        /// A value the JSON mapping cannot hold (floats, non-finite numbers) or cannot decode.
        case value
        /// A limit was exceeded (payload size, batch size).
        case limit
        /// Storage or another lower-level failure.
        case storage
        /// Networking failed to start (address in use, another node on this home).
        case network
    }

    public let kind: Kind
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
