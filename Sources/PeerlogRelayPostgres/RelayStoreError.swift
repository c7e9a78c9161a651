/// A relay store problem, said in one line.
public struct RelayStoreError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ message: String) { description = message }
}
