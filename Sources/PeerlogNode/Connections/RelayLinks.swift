import Logging
import PeerlogEngine
import PeerlogModel
import Synchronization

/// Keeps the relays our groups name connected (docs/PROTOCOL.md §19.1): one dialer per relay
/// address and key, started (in the node's task group) when a group names it and stopped when
/// none does any more.
final class RelayLinks: Sendable {
    private struct Link {
        let dialer: Dialer
    }

    private let logger: Logger
    private let startDialer: @Sendable (Dialer) -> Void
    private let overrides: [DeviceID: PeerAddress]
    private let links = Mutex<[RelayEndpoint: Link]>([:])
    /// Addresses that do not parse, said once each.
    private let reported = Mutex<Set<String>>([])

    init(logger: Logger, overrides: [DeviceID: PeerAddress] = [:], startDialer: @escaping @Sendable (Dialer) -> Void) {
        self.logger = logger
        self.overrides = overrides
        self.startDialer = startDialer
    }

    func reconcile(_ endpoints: Set<RelayEndpoint>) {
        let current = links.withLock { $0 }
        for (endpoint, link) in current where !endpoints.contains(endpoint) {
            logger.info("no group names the relay \(endpoint.key.short) at \(endpoint.address) any more")
            link.dialer.stop()
            links.withLock { $0[endpoint] = nil }
        }
        for endpoint in endpoints.sorted(by: { $0.address < $1.address }) where current[endpoint] == nil {
            guard let address = overrides[endpoint.key] ?? (try? PeerAddress(parsing: endpoint.address)) else {
                if reported.withLock({ $0.insert(endpoint.address).inserted }) {
                    logger.warning(
                        "a group names the relay \(endpoint.key.short) at \"\(endpoint.address)\", which is not HOST:PORT; not dialing it"
                    )
                }
                continue
            }
            logger.info("keeping the relay \(endpoint.key.short) at \(address) connected")
            let dialer = Dialer(address: address, source: .relay, expectedDevice: endpoint.key)
            links.withLock { $0[endpoint] = Link(dialer: dialer) }
            startDialer(dialer)
        }
    }

    func stopAll() {
        let all = links.withLock { l -> [Link] in
            defer { l = [:] }
            return Array(l.values)
        }
        for link in all { link.dialer.stop() }
    }

    var status: [PeerStatus] {
        links.withLock { $0 }.sorted { $0.key.address < $1.key.address }.map { endpoint, link in
            var s = link.dialer.status
            s.device = s.device ?? endpoint.key.string
            return s
        }
    }
}
