import PeerlogCrypto

/// The one error type of `PeerlogRelayPostgres`, a `CodedFailure`: a code
/// (an `ErrorCode`, so codes can be added), one line for the user, where it was raised, and
/// equality on the code only. Descriptions never hold the URL's password or SQL arguments.
public typealias RelayStoreError = CodedFailure<RelayStoreDomain>

/// The domain of `RelayStoreError`.
public enum RelayStoreDomain: ErrorDomain {
    /// Its detail is a whole sentence.
    public static var wording: ErrorWording { .detail }
}

extension CodedFailure where Domain == RelayStoreDomain {
    /// A failure of `code` (default `.database`) whose sentence is `message`.
    public init(_ message: String, code: Code = .database, file: String = #fileID, line: Int = #line) {
        self.init(code, message, file: file, line: line)
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
