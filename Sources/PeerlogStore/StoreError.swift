import PeerlogCrypto

/// The one error type of `PeerlogStore` (besides GRDB's own `DatabaseError`, passed through),
/// a `CodedFailure`: a code (an `ErrorCode`, so codes can be added),
/// one sentence for the user (the detail), where it was raised, and equality on the code only.
/// Descriptions name paths, never SQL arguments.
public typealias StoreError = CodedFailure<StoreDomain>

/// The domain of ``StoreError``.
public enum StoreDomain: ErrorDomain {
    /// Its detail is a whole sentence.
    public static var wording: ErrorWording { .detail }
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
