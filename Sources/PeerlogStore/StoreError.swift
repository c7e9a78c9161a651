/// A store that cannot be opened or written, in words for the user.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}
