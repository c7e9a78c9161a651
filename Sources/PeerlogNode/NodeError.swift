import PeerlogCrypto

/// The one error type of `PeerlogNode`, in the shape of `SequencerError`: a ``code`` (an
/// `ErrorCode`, so codes can be added), one line for the user, where it was raised, and
/// equality on the code only. Descriptions name addresses and paths, never keys.
public struct NodeError: CodedError {
    /// What went wrong; compare against the static members.
    public typealias Code = ErrorCode<NodeError>

    /// The kind of failure.
    public let code: Code
    /// Why, without the location prefix (for `invalidConfiguration`: the line's problem).
    public let detail: String
    /// For `invalidConfiguration`: the configuration file.
    public let configurationFile: String?
    /// For `invalidConfiguration`: the 1-based line, or 0 when the file cannot be read.
    public let configurationLine: Int?
    /// One line for the user.
    public let description: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    init(
        _ code: Code, _ detail: String, description: String, configuration: (file: String, line: Int)? = nil,
        file: String, line: Int
    ) {
        self.code = code
        self.detail = detail
        self.description = description
        configurationFile = configuration?.file
        configurationLine = configuration?.line
        self.file = file
        self.line = line
    }

    static func invalidAddress(_ text: String, _ why: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(.invalidAddress, why, description: "invalid address \"\(text)\": \(why)", file: file, line: line)
    }
    static func invalidConfiguration(
        path: String, configurationLine: Int, _ why: String, file: String = #fileID, line: Int = #line
    ) -> Self {
        Self(
            .invalidConfiguration, why, description: "\(path):\(configurationLine): \(why)",
            configuration: (path, configurationLine), file: file, line: line)
    }
    static func controlSocket(_ why: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(.controlSocket, why, description: "control socket: \(why)", file: file, line: line)
    }
    static func pairing(_ why: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(.pairing, why, description: "pairing: \(why)", file: file, line: line)
    }
    static func alreadyRunning(_ path: String, file: String = #fileID, line: Int = #line) -> Self {
        Self(
            .alreadyRunning, path, description: "a daemon already runs for this home (control socket \(path) answers)",
            file: file, line: line)
    }
}

extension ErrorCode where Domain == NodeError {
    /// An address is not HOST:PORT (or [IPV6]:PORT) with a valid port.
    public static let invalidAddress = Self("invalidAddress")
    /// A configuration file cannot be read or has a bad line (``configurationLine``).
    public static let invalidConfiguration = Self("invalidConfiguration")
    /// The control socket cannot be reached or answered badly.
    public static let controlSocket = Self("controlSocket")
    /// A daemon already runs for this home.
    public static let alreadyRunning = Self("alreadyRunning")
    /// A pairing session cannot be opened or run (docs/PROTOCOL.md §20).
    public static let pairing = Self("pairing")
}
