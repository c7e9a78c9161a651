// The values Discovery takes and reports are plain data, no DNS-SD types, so the node layer
// and its tests never need the C library.

/// A service this process publishes.
package struct ServiceAdvertisement: Sendable, Equatable {
    /// Instance name; the daemon may rename it on conflict (reported via `.registered`).
    package var name: String
    package var port: Int
    package var txt: [String: String]

    package init(name: String, port: Int, txt: [String: String]) {
        self.name = name
        self.port = port
        self.txt = txt
    }
}
