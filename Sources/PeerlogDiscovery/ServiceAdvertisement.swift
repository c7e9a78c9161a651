// The values Discovery takes and reports are plain data, no DNS-SD types, so the node layer
// and its tests never need the C library.

/// A service this process publishes.
public struct ServiceAdvertisement: Sendable, Equatable {
    /// Instance name; the daemon may rename it on conflict (reported via `.registered`).
    public var name: String
    public var port: Int
    public var txt: [String: String]

    public init(name: String, port: Int, txt: [String: String]) {
        self.name = name
        self.port = port
        self.txt = txt
    }
}
