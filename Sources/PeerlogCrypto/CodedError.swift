/// The shape every module's error type shares (`SequencerError` is the model, written out by
/// hand because `PeerlogSequencer` depends on nothing): a ``code`` an app can switch on, free-form
/// diagnostics, where it was raised, and equality and hashing on the code only.
public protocol CodedError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure; usually `ErrorCode<Self>`.
    associatedtype Code: Hashable & Sendable
    /// The kind of failure.
    var code: Code { get }
}

extension CodedError {
    /// Errors are equal when their codes are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }
    /// Hashes the code only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

/// A code of the error type `Domain`; compare against the static members a module declares in
/// `extension ErrorCode where Domain == SomeError`. Codes are equal when their names are, and only
/// the package declares them, so a code can be added without breaking an app's `switch`.
public struct ErrorCode<Domain>: Hashable, Sendable, CustomStringConvertible {
    /// The code's name, e.g. `notAMember`; it is the code's identity.
    public let name: String
    /// The code's name, or the words its module gives it.
    public let description: String

    package init(_ name: String, description: String? = nil) {
        self.name = name
        self.description = description ?? name
    }

    /// Codes are equal when their names are.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.name == rhs.name }
    /// Hashes the name only, consistent with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// The error type that most modules share, written once: a ``code`` to switch on, one sentence for
/// people (``detail``), where it was raised, and equality on the code only. A module names its own
/// with a typealias over a domain, e.g. `public typealias CryptoError = CodedFailure<CryptoDomain>`,
/// and declares its codes in `extension ErrorCode where Domain == CryptoError`.
public struct CodedFailure<Domain: ErrorDomain>: CodedError {
    /// The codes of this error type (static members of `ErrorCode where Domain == Self`).
    public typealias Code = ErrorCode<CodedFailure<Domain>>

    /// The kind of failure.
    public let code: Code
    /// One sentence for people: what failed and, where it helps, what to do. Never secret.
    public let detail: String
    /// Where the error was raised.
    public let file: String
    /// Where the error was raised.
    public let line: Int

    /// An error with `code`, a `detail` for people, and where it was raised.
    public init(_ code: Code, _ detail: String = "", file: String = #fileID, line: Int = #line) {
        self.code = code
        self.detail = detail
        self.file = file
        self.line = line
    }

    /// How the domain words it (``ErrorDomain/wording``).
    public var description: String {
        switch Domain.wording {
        case .detail: detail.isEmpty ? code.description : detail
        case .codeThenDetail: detail.isEmpty ? code.description : "\(code): \(detail)"
        }
    }
}

/// The module a ``CodedFailure`` belongs to: an empty enum that says how its errors read.
public protocol ErrorDomain: Sendable {
    /// How `description` reads; `.codeThenDetail` unless the domain says otherwise.
    static var wording: ErrorWording { get }
}

extension ErrorDomain {
    /// The code's words, then the detail.
    public static var wording: ErrorWording { .codeThenDetail }
}

/// How a ``CodedFailure`` reads.
public enum ErrorWording: Sendable {
    /// The detail alone (it is a whole sentence); the code's words when there is none.
    case detail
    /// The code's words, a colon, then the detail (`authentication failed: …`).
    case codeThenDetail
}
