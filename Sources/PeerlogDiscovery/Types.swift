// The values Discovery takes and reports. Plain data, no DNS-SD types, so the node layer and
// its tests never need the C library.

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

public enum DiscoveryEvent: Sendable, Equatable {
    /// Our advertisement is live under this (possibly renamed) instance name.
    case registered(name: String)
    /// A service was resolved, or resolved again with a changed address, port or TXT.
    case found(DiscoveredService)
    /// A previously found service went away (also sent for every found service when the
    /// daemon connection is lost, since nothing is known about them any more).
    case lost(name: String)
    /// The mDNS daemon is not reachable: one clear sentence. Sent once per outage.
    case unavailable(String)
}

public enum PeerlogService {
    public static let type = "_peerlog._tcp"

    /// TXT keys: "v" protocol version ("1"), "dev" device id text, "id" identity id text,
    /// "net" network id (omitted when empty).
    public static func txt(device: String, identity: String, network: String) -> [String: String] {
        var txt = ["v": "1", "dev": device, "id": identity]
        if !network.isEmpty { txt["net"] = network }
        return txt
    }
}
