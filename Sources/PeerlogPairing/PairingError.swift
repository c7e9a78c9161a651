import PeerlogCrypto

/// The one error type of `PeerlogPairing` (a `CodedFailure`): a code to switch on, a
/// detail for people (never a secret: no code digits, no keys), where it was raised, equality on the
/// code only. For the `refused` code the detail is the peer's reason, as it sent it.
public typealias PairingError = CodedFailure<PairingDomain>

/// The domain of ``PairingError``.
public enum PairingDomain: ErrorDomain {}

extension CodedFailure where Domain == PairingDomain {
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
