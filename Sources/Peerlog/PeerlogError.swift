/// Why a facade call failed: a kind an app can switch on, and one sentence for people.
public struct PeerlogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, for code to switch on.
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

    /// What went wrong.
    public let kind: Kind
    /// One sentence for people: what failed and what to do.
    public let description: String

    /// An error of `kind` saying `description`.
    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
