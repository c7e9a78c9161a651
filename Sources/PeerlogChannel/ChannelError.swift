import PeerlogCrypto

/// Errors thrown to the local caller of `send`; the connection itself is unaffected. The one
/// error type of `PeerlogChannel`, a `CodedFailure`: a code (an
/// `ErrorCode`, so codes can be added), where it was raised, and equality on the code only.
public typealias ChannelError = CodedFailure<ChannelDomain>

/// The domain of ``ChannelError``.
public enum ChannelDomain: ErrorDomain {
    /// Its detail is a whole sentence.
    public static var wording: ErrorWording { .detail }
}

extension CodedFailure where Domain == ChannelDomain {
    package static func messageTooLarge(size: Int, limit: Int, file: String = #fileID, line: Int = #line) -> Self {
        Self(.messageTooLarge, "message of \(size) bytes exceeds \(limit) bytes", file: file, line: line)
    }
}

extension ErrorCode where Domain == ChannelError {
    /// The handshake has not completed yet.
    public static let notEstablished = Self("notEstablished", description: "channel is not established")
    /// The channel was closed.
    public static let closed = Self("closed", description: "channel is closed")
    /// Application messages must hold at least one byte.
    public static let emptyMessage = Self("emptyMessage", description: "empty application messages are invalid")
    /// The message is over the configured `maxMessageBytes`.
    public static let messageTooLarge = Self("messageTooLarge")
}
