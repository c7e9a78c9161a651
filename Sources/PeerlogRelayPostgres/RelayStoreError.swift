/// The one error type of `PeerlogRelayPostgres`, in the shape of `SequencerError`: a ``code``
/// over a private enum (so codes can be added), one line for the user, where it was raised, and
/// equality on the code only. Descriptions never hold the URL's password or SQL arguments.
public struct RelayStoreError: Error, Hashable, CustomStringConvertible, Sendable {
    /// What went wrong; compare against the static members.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: Hashable, Sendable { case invalidURL, unreachable, schemaVersion, database, outOfRange }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The `postgres://` URL is malformed or incomplete.
        public static let invalidURL = Code(.invalidURL)
        /// The server cannot be reached or refused the connection.
        public static let unreachable = Code(.unreachable)
        /// The database holds a relay schema newer than this build knows.
        public static let schemaVersion = Code(.schemaVersion)
        /// A statement failed (after the retries for transient failures).
        public static let database = Code(.database)
        /// A value does not fit a column (a seq over BIGINT).
        public static let outOfRange = Code(.outOfRange)

        /// The code's name, e.g. `unreachable`.
        public var description: String { "\(base)" }
    }

    /// The kind of failure.
    public let code: Code
    /// One line for the user.
    public let description: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    public init(_ message: String, code: Code = .database, file: String = #fileID, line: Int = #line) {
        self.code = code
        description = message
        self.file = file
        self.line = line
    }

    /// Errors are equal when their codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}
