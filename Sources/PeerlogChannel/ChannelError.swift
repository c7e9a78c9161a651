import PeerlogCrypto

/// Errors thrown to the local caller of `send`; the connection itself is unaffected. The one
/// error type of `PeerlogChannel`, in the shape of `SequencerError`: a ``code`` (an
/// `ErrorCode`, so codes can be added), where it was raised, and equality on the code only.
public struct ChannelError: CodedError {
    /// What went wrong; compare against the static members.
    public typealias Code = ErrorCode<ChannelError>

    /// The kind of failure.
    public let code: Code
    /// The sentence for people (sizes, never contents).
    public let description: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    init(_ code: Code, _ description: String, file: String, line: Int) {
        self.code = code
        self.description = description
        self.file = file
        self.line = line
    }

    package static func notEstablished(file: String = #fileID, line: Int = #line) -> Self {
        Self(.notEstablished, "channel is not established", file: file, line: line)
    }
    package static func closed(file: String = #fileID, line: Int = #line) -> Self {
        Self(.closed, "channel is closed", file: file, line: line)
    }
    package static func emptyMessage(file: String = #fileID, line: Int = #line) -> Self {
        Self(.emptyMessage, "empty application messages are invalid", file: file, line: line)
    }
    package static func messageTooLarge(size: Int, limit: Int, file: String = #fileID, line: Int = #line) -> Self {
        Self(.messageTooLarge, "message of \(size) bytes exceeds \(limit) bytes", file: file, line: line)
    }
}

extension ErrorCode where Domain == ChannelError {
    /// The handshake has not completed yet.
    public static let notEstablished = Self("notEstablished")
    /// The channel was closed.
    public static let closed = Self("closed")
    /// Application messages must hold at least one byte.
    public static let emptyMessage = Self("emptyMessage")
    /// The message is over the configured `maxMessageBytes`.
    public static let messageTooLarge = Self("messageTooLarge")
}
