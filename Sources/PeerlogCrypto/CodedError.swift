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
