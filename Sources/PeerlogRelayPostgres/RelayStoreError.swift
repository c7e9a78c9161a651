import PeerlogCrypto

/// The one error type of `PeerlogRelayPostgres`, in the shape of `SequencerError`: a ``code``
/// (an `ErrorCode`, so codes can be added), one line for the user, where it was raised, and
/// equality on the code only. Descriptions never hold the URL's password or SQL arguments.
public struct RelayStoreError: CodedError {
    /// What went wrong; compare against the static members.
    public typealias Code = ErrorCode<RelayStoreError>

    /// The kind of failure.
    public let code: Code
    /// One line for the user.
    public let description: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    /// An error with one line for the user (never the URL's password or SQL arguments), its
    /// code, and where it was raised.
    public init(_ message: String, code: Code = .database, file: String = #fileID, line: Int = #line) {
        self.code = code
        description = message
        self.file = file
        self.line = line
    }
}

extension ErrorCode where Domain == RelayStoreError {
    /// The `postgres://` URL is malformed or incomplete.
    public static let invalidURL = Self("invalidURL")
    /// The server cannot be reached or refused the connection.
    public static let unreachable = Self("unreachable")
    /// The database holds a relay schema newer than this build knows.
    public static let schemaVersion = Self("schemaVersion")
    /// The server did not answer within a deadline (`RelayStoreLimits`): it stopped, is
    /// unreachable, or accepts connections and never answers.
    public static let timeout = Self("timeout")
    /// A statement failed (after the retries for transient failures).
    public static let database = Self("database")
    /// A value does not fit a column (a seq over BIGINT).
    public static let outOfRange = Self("outOfRange")
}
