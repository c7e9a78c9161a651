import Logging
import PeerlogDiscovery
import PeerlogModel
import Synchronization

/// Peers found by DNS-SD: one entry per device (several services or addresses of the same
/// device merge), a dialer for each that may be let in on both sides, stopped when the
/// device's last service goes away.
final class LanPeers: Sendable {
    struct Entry {
        var device: DeviceID
        var identity: IdentityID?
        var services: [String: DiscoveredService] = [:]
        var dialer: Dialer?
        var note: String?
    }

    private let local: LocalDevice
    private let network: String
    private let hub: NodeHub
    private let logger: Logger
    private let startDialer: @Sendable (Dialer) -> Void
    private let lock = Mutex<[DeviceID: Entry]>([:])
    private let unavailableReported = Mutex(false)
    let availability = Mutex<String?>(nil)

    init(
        local: LocalDevice, network: String, hub: NodeHub, logger: Logger,
        startDialer: @escaping @Sendable (Dialer) -> Void
    ) {
        self.local = local
        self.network = network
        self.hub = hub
        self.logger = logger
        self.startDialer = startDialer
    }

    func handle(_ event: DiscoveryEvent) {
        switch event {
        case .registered(let name):
            availability.withLock { $0 = nil }
            unavailableReported.withLock { $0 = false }
            logger.info("advertising on the LAN as \"\(name)\" (\(PeerlogDNSSD.type))")
        case .unavailable(let why):
            availability.withLock { $0 = why }
            // Said once per outage: static peers keep working without it.
            if !unavailableReported.withLock({ $0 }) {
                unavailableReported.withLock { $0 = true }
                logger.warning("LAN discovery is unavailable: \(why); static peers still work")
            }
        case .found(let service):
            found(service)
        case .lost(let name):
            lost(name)
        }
    }

    private func found(_ service: DiscoveredService) {
        guard let devText = service.txt["dev"], let device = try? DeviceID(string: devText) else {
            logger.debug("ignoring service \"\(service.name)\": no valid dev key in its TXT record")
            return
        }
        guard device != local.device else { return }  // ourselves
        guard (service.txt["net"] ?? "") == network else {
            logger.debug("ignoring \(device.short): network id \"\(service.txt["net"] ?? "")\" is not ours")
            return
        }
        let identity = service.txt["id"].flatMap { try? IdentityID(string: $0) }
        guard let address = service.addresses.first, (1...65535).contains(service.port) else { return }
        let target = PeerAddress(host: address, port: service.port)
        var toStart: Dialer?
        var toStop: Dialer?
        lock.withLock { entries in
            var e = entries[device] ?? Entry(device: device, identity: identity)
            e.services[service.name] = service
            e.identity = identity ?? e.identity
            let mayConnect = identity.map { hub.mayConnect(identity: $0) } ?? false
            e.note =
                mayConnect
                ? nil : "not connecting: identity \(identity?.description ?? "unknown") shares no group with us"
            if mayConnect, e.dialer?.address != target {
                toStop = e.dialer
                let dialer = Dialer(address: target, source: .mdns, expectedDevice: device)
                e.dialer = dialer
                toStart = dialer
            }
            entries[device] = e
        }
        toStop?.stop()
        if let dialer = toStart {
            logger.info("found \(device.short) on the LAN at \(target)")
            startDialer(dialer)
        }
    }

    private func lost(_ name: String) {
        var stop: [Dialer] = []
        lock.withLock { entries in
            for (device, var e) in entries where e.services[name] != nil {
                e.services[name] = nil
                if e.services.isEmpty {
                    if let d = e.dialer { stop.append(d) }
                    entries[device] = nil
                } else {
                    entries[device] = e
                }
            }
        }
        for d in stop { d.stop() }
    }

    /// Membership changed: devices we skipped may be let in now.
    func recheck() {
        let services = lock.withLock { $0.values.flatMap(\.services.values) }
        for s in services { found(s) }
    }

    func stopAll() {
        let dialers = lock.withLock { entries -> [Dialer] in
            defer { entries = [:] }
            return entries.values.compactMap(\.dialer)
        }
        for d in dialers { d.stop() }
    }

    /// One row per discovered device, for `status` and `peers`.
    var status: [PeerStatus] {
        lock.withLock { $0 }.values.sorted { $0.device.string < $1.device.string }.map { e in
            if let d = e.dialer {
                var s = d.status
                s.device = e.device.string
                return s
            }
            let address = e.services.values.first.map { "\($0.addresses.first ?? $0.host):\($0.port)" } ?? "?"
            return PeerStatus(
                address: address, state: .discovered, direction: .outbound, source: .mdns, device: e.device.string,
                lastError: e.note)
        }
    }
}
