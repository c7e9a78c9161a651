/// What the session knows about one browsed service instance.
final class TrackedService {
    let name: String
    let type: String
    let domain: String
    var interfaces: Set<UInt32>
    var interfaceIndex: UInt32
    var host = ""
    var port = 0
    var txt: [String: String] = [:]
    /// Addresses answered in the current query round.
    var roundAddresses: [String] = []
    var addresses: [String] = []
    /// Report the first address at once (new service or new host) instead of at round end.
    var eager = true
    var reported: DiscoveredService?
    var resolveOp: DNSSDOperation?
    var queryOp: DNSSDOperation?
    var nextResolve: ContinuousClock.Instant = .now
    var deadline: ContinuousClock.Instant = .now

    init(name: String, type: String, domain: String, interface: UInt32) {
        self.name = name
        self.type = type
        self.domain = domain
        interfaces = [interface]
        interfaceIndex = interface
    }

    var snapshot: DiscoveredService {
        // "h1.local." as resolved; reported without the root dot, as users write host names.
        let shown = host.hasSuffix(".") ? String(host.dropLast()) : host
        return DiscoveredService(
            name: name, host: shown, port: port, addresses: addresses, txt: txt, interfaceIndex: interfaceIndex)
    }
}
