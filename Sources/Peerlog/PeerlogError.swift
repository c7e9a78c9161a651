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
        /// A file to read or write: it exists already (exports never overwrite), cannot be
        /// read or written, or is malformed (an import names the line).
        case file
    }

    /// Which operation of a batch was refused, and why.
    public struct BatchEntry: Sendable, Equatable {
        /// Its index in the batch (0-based).
        public let index: Int
        /// Why it was refused.
        public let reason: String
    }

    /// What went wrong.
    public let kind: Kind
    /// One sentence for people: what failed and what to do.
    public let description: String
    /// For a refused batch: the operation that was refused (nothing was written).
    public let batchEntry: BatchEntry?

    /// An error of `kind` saying `description`.
    public init(_ kind: Kind, _ description: String) {
        self.init(kind, description, batchEntry: nil)
    }

    init(_ kind: Kind, _ description: String, batchEntry: BatchEntry?) {
        self.kind = kind
        self.description = description
        self.batchEntry = batchEntry
    }
}
