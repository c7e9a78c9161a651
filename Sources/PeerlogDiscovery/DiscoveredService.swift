// The values Discovery takes and reports are plain data, no DNS-SD types, so the node layer
// and its tests never need the C library.

/// A browsed service, resolved to host, port, TXT and IPv4 addresses.
public struct DiscoveredService: Sendable, Hashable {
    /// Service instance name.
    public let name: String
    /// Host target from resolve (e.g. "plh2.local").
    public let host: String
    public let port: Int
    /// IPv4 dotted quads of `host`, in the order the daemon answered; never empty when reported.
    public let addresses: [String]
    /// TXT entries as key=value (entries without '=' map to "").
    public let txt: [String: String]
    public let interfaceIndex: UInt32

    public init(name: String, host: String, port: Int, addresses: [String], txt: [String: String], interfaceIndex: UInt32) {
        self.name = name
        self.host = host
        self.port = port
        self.addresses = addresses
        self.txt = txt
        self.interfaceIndex = interfaceIndex
    }
}
