// The values Discovery takes and reports are plain data, no DNS-SD types, so the node layer
// and its tests never need the C library.

/// A browsed service, resolved to host, port, TXT and IPv4 addresses.
package struct DiscoveredService: Sendable, Hashable {
    /// Service instance name.
    package let name: String
    /// Host target from resolve (e.g. "plh2.local").
    package let host: String
    package let port: Int
    /// IPv4 dotted quads of `host`, in the order the daemon answered; never empty when reported.
    package let addresses: [String]
    /// TXT entries as key=value (entries without '=' map to "").
    package let txt: [String: String]
    package let interfaceIndex: UInt32

    package init(
        name: String, host: String, port: Int, addresses: [String], txt: [String: String], interfaceIndex: UInt32
    ) {
        self.name = name
        self.host = host
        self.port = port
        self.addresses = addresses
        self.txt = txt
        self.interfaceIndex = interfaceIndex
    }
}
