/// The one error type of `PeerlogStore` (besides GRDB's own `DatabaseError`, passed through),
/// in the shape of `SequencerError`: a ``code`` over a private enum (so codes can be added),
/// one sentence for the user, where it was raised, and equality on the code only.
/// Descriptions name paths, never SQL arguments.
public struct StoreError: Error, Hashable, CustomStringConvertible, Sendable {
    /// What went wrong; compare against the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable { case readOnly, needsUpgrade, openLock, unknownStoredValue }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The replica's directory is read-only and the operation writes.
        public static let readOnly = Code(.readOnly)
        /// The replica was made by an older version and must be migrated, which needs write access.
        public static let needsUpgrade = Code(.needsUpgrade)
        /// The lock that serialises opening the replica cannot be taken.
        public static let openLock = Code(.openLock)
        /// A row holds a kind or outcome this build does not know (written by a newer version,
        /// or damaged).
        public static let unknownStoredValue = Code(.unknownStoredValue)

        /// The code's name, e.g. `readOnly`.
        public var description: String { "\(base)" }
    }

    /// The kind of failure.
    public let code: Code
    /// One sentence for the user.
    public let description: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    init(_ code: Code, _ description: String, file: String = #fileID, line: Int = #line) {
        self.code = code
        self.description = description
        self.file = file
        self.line = line
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
