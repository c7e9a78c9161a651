import PeerlogCrypto

/// The one error type of `PeerlogPairing`, in the shape of `CodedError`: a ``code`` to switch on, a
/// detail for people (never a secret: no code digits, no keys), where it was raised, equality on the
/// code only. For the `refused` code the detail is the peer's reason, as it sent it.
public struct PairingError: CodedError {
    /// The codes of this module (static members of `ErrorCode where Domain == PairingError`).
    public typealias Code = ErrorCode<PairingError>

    /// The kind of failure.
    public let code: Code
    /// What exactly; for `refused`, the peer's reason text.
    public let detail: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    /// An error with `code`, a detail for people, and where it was raised.
    public init(_ code: Code, _ detail: String = "", file: String = #fileID, line: Int = #line) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }

    /// The code's words, then the detail if there is one.
    public var description: String { detail.isEmpty ? code.description : "\(code): \(detail)" }

    /// A `pair_error` message (docs/PROTOCOL.md §20.4) telling the peer about this error, e.g. for the
    /// host's listener to send when ``PairingOffer/beginExchange(now:)`` refuses, before it closes.
    public var wireMessage: [UInt8] { PairingMessage.error(code: code.name, reason: description).encoded() }
}

extension ErrorCode where Domain == PairingError {
    /// The text is not a pairing code (`N-DDDD-DDDD`).
    public static let invalidCode = Self("invalidCode", description: "invalid pairing code")
    /// The PAKE's key confirmation failed: the two sides used different codes.
    public static let wrongCode = Self("wrongCode", description: "wrong pairing code")
    /// The code's lifetime is over.
    public static let expired = Self("expired", description: "pairing code expired")
    /// The code allowed its last attempt (3 failed or abandoned exchanges).
    public static let exhausted = Self("exhausted", description: "pairing code used up by failed attempts")
    /// The code has already paired a device or a person.
    public static let used = Self("used", description: "pairing code already used")
    /// A message is not a well-formed pairing message, or is over `maxMessageBytes`.
    public static let malformed = Self("malformed", description: "malformed pairing message")
    /// A well-formed message that is not the one this step expects.
    public static let unexpectedMessage = Self("unexpectedMessage", description: "unexpected pairing message")
    /// The peer refused and said why (the detail is its reason).
    public static let refused = Self("refused", description: "refused by the peer")
    /// A payload inside the exchange does not decode, verify or match what was asked.
    public static let badPayload = Self("badPayload", description: "bad pairing payload")
}
