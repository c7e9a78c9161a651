import PeerlogCrypto

/// The one error type of `PeerlogModel`: malformed or invalid receipts, envelopes,
/// certificates and key files. A `CodedFailure`: a code (an
/// `ErrorCode`, so codes can be added), where it was raised, and equality on the code only.
/// Descriptions never include secrets.
public typealias ModelError = CodedFailure<ModelDomain>

/// The domain of ``ModelError``.
public enum ModelDomain: ErrorDomain {}

extension ErrorCode where Domain == ModelError {
    /// The bytes are not the strict CBOR this format needs.
    public static let malformedEncoding = Self("malformedEncoding", description: "malformed CBOR")
    /// A field is missing, extra or of the wrong type.
    public static let wrongShape = Self("wrongShape", description: "wrong structure")
    /// A version this implementation does not read.
    public static let unsupportedVersion = Self("unsupportedVersion", description: "unsupported version")
    /// A field's value is out of its range.
    public static let fieldOutOfRange = Self("fieldOutOfRange", description: "field out of range")
    /// An object (or a local write's payload) is over its size limit.
    public static let sizeLimitExceeded = Self("sizeLimitExceeded", description: "size limit exceeded")
    /// A signature does not verify.
    public static let badSignature = Self("badSignature", description: "signature does not verify")
    /// A certificate does not match the keys or the author it should.
    public static let certificateMismatch = Self("certificateMismatch", description: "certificate does not match")
    /// A key file is missing, exists already or cannot be used.
    public static let keyFile = Self("keyFile", description: "key file problem")
    /// A passphrase-sealed file (an identity backup, §21) does not open: the passphrase is wrong
    /// or the file was changed; authenticated encryption cannot tell the two apart.
    public static let wrongPassphrase = Self("wrongPassphrase", description: "wrong passphrase or damaged file")
}
