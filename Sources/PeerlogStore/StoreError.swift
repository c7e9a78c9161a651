import PeerlogCrypto

/// The one error type of `PeerlogStore` (besides GRDB's own `DatabaseError`, passed through),
/// in the shape of `SequencerError`: a ``code`` (an `ErrorCode`, so codes can be added),
/// one sentence for the user, where it was raised, and equality on the code only.
/// Descriptions name paths, never SQL arguments.
public struct StoreError: CodedError {
    /// What went wrong; compare against the static members.
    public typealias Code = ErrorCode<StoreError>

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
}

extension ErrorCode where Domain == StoreError {
    /// The replica's directory is read-only and the operation writes.
    public static let readOnly = Self("readOnly")
    /// The replica was made by an older version and must be migrated, which needs write access.
    public static let needsUpgrade = Self("needsUpgrade")
    /// The lock that serialises opening the replica cannot be taken.
    public static let openLock = Self("openLock")
    /// A row holds a kind or outcome this build does not know (written by a newer version,
    /// or damaged).
    public static let unknownStoredValue = Self("unknownStoredValue")
}

extension ErrorCode where Domain == StoreError {
    /// A blob file cannot be read or written (the disk is full, a file is missing, …).
    public static let blobFile = Self("blobFile")
    /// The disk holding the home is full.
    public static let diskFull = Self("diskFull")
}
