// Browsed services: resolve each to host/port/TXT, then query the host's A records.
// Resolves and address queries are short-lived (each ref is a daemon connection with its own
// thread in avahi's compat layer) and repeated every minute to notice changes.
import CDNSSD

/// What the engine knows about one browsed service instance.
final class Tracked {
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
    var resolveOp: Operation?
    var queryOp: Operation?
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
        return DiscoveredService(name: name, host: shown, port: port, addresses: addresses, txt: txt, interfaceIndex: interfaceIndex)
    }
}

extension Engine {
    static let maxTracked = 256
    /// Resolves and queries open at once, each a daemon connection.
    static let maxInFlight = 16
    static let refreshInterval: Duration = .seconds(60)
    static let resolveTimeout: Duration = .seconds(10)
    /// A query round ends this long after its first answer (later A records of a host come in
    /// the same mDNS response) or after `queryTimeout` without one.
    static let querySettle: Duration = .milliseconds(300)
    static let queryTimeout: Duration = .seconds(3)

    func browseReply(flags: DNSServiceFlags, interface: UInt32, error: DNSServiceErrorType, name: UnsafePointer<CChar>?, type: UnsafePointer<CChar>?, domain: UnsafePointer<CChar>?) {
        guard error == Engine.noError else { failure = failure ?? error; return }
        guard let name, let type, let domain else { return }
        let key = String(cString: name)
        if flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0 {
            if let known = services[key] {
                known.interfaces.insert(interface)
            } else if services.count < Engine.maxTracked {
                services[key] = Tracked(name: key, type: String(cString: type), domain: String(cString: domain), interface: interface)
            }
        } else if let known = services[key] {
            known.interfaces.remove(interface)
            guard known.interfaces.isEmpty else { return }
            retire(known.resolveOp)
            retire(known.queryOp)
            services[key] = nil
            if known.reported != nil { emit(.lost(name: key)) }
        }
    }

    /// Times out operations and starts due resolves, within `maxInFlight`.
    func housekeeping(now: ContinuousClock.Instant) {
        var inFlight = 0
        for service in services.values {
            if let op = service.resolveOp, now >= service.deadline { resolveFailed(op) }
            if let op = service.queryOp, now >= service.deadline { queryFinished(op) }
            inFlight += (service.resolveOp == nil ? 0 : 1) + (service.queryOp == nil ? 0 : 1)
        }
        for service in services.values where inFlight < Engine.maxInFlight {
            guard service.resolveOp == nil, service.queryOp == nil, now >= service.nextResolve else { continue }
            service.deadline = now + Engine.resolveTimeout
            service.nextResolve = now + Engine.refreshInterval
            let err = begin(.resolve, service: service.name) { ref, ctx in
                DNSServiceResolve(ref, 0, service.interfaceIndex, service.name, service.type, service.domain, { _, _, interface, err, _, host, port, txtLen, txt, ctx in
                    guard let op = Operation.from(ctx) else { return }
                    let txtBytes = txt.map { Array(UnsafeBufferPointer(start: $0, count: Int(txtLen))) } ?? []
                    op.engine.resolveReply(op, error: err, interface: interface, host: host.map { String(cString: $0) }, port: Int(UInt16(bigEndian: port)), txt: txtBytes)
                }, ctx)
            }
            if err == nil { inFlight += 1 } else { service.nextResolve = now + Engine.resolveTimeout }
        }
    }

    func resolveFailed(_ op: Operation) {
        retire(op)
        guard let service = services[op.service] else { return }
        service.resolveOp = nil
        service.nextResolve = .now + Engine.resolveTimeout
    }

    private func resolveReply(_ op: Operation, error: DNSServiceErrorType, interface: UInt32, host: String?, port: Int, txt: [UInt8]) {
        guard error == Engine.noError, let host, !host.isEmpty, let service = services[op.service] else { return resolveFailed(op) }
        retire(op)
        service.resolveOp = nil
        service.interfaceIndex = interface
        service.port = port
        service.txt = TXTRecord.decode(txt)
        if host != service.host {
            service.host = host
            service.addresses = []
            service.eager = true
        } else if service.reported != nil {
            report(service)  // port or TXT may have changed; addresses follow at round end
        }
        service.roundAddresses = []
        service.deadline = .now + Engine.queryTimeout
        let err = begin(.query, service: service.name) { ref, ctx in
            DNSServiceQueryRecord(ref, 0, interface, host, UInt16(kDNSServiceType_A), UInt16(kDNSServiceClass_IN), { _, flags, _, err, _, rrtype, _, rdlen, rdata, _, ctx in
                guard let op = Operation.from(ctx) else { return }
                guard err == Engine.noError else { return op.engine.queryFinished(op) }
                guard rrtype == UInt16(kDNSServiceType_A), rdlen == 4, let rdata else { return }
                let b = rdata.assumingMemoryBound(to: UInt8.self)
                op.engine.addressReply(op, address: "\(b[0]).\(b[1]).\(b[2]).\(b[3])", added: flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0)
            }, ctx)
        }
        if err != nil { service.nextResolve = .now + Engine.resolveTimeout }
    }

    private func addressReply(_ op: Operation, address: String, added: Bool) {
        guard let service = services[op.service] else { return queryFinished(op) }
        if added {
            if !service.roundAddresses.contains(address) { service.roundAddresses.append(address) }
            service.deadline = min(service.deadline, .now + Engine.querySettle)
        } else {
            service.roundAddresses.removeAll { $0 == address }
        }
        if service.eager, !service.roundAddresses.isEmpty {
            service.eager = false
            service.addresses = service.roundAddresses
            report(service)
        }
    }

    /// Ends a query round: its answers replace the addresses (none at all keeps the old ones,
    /// as a silent round says nothing about the host).
    func queryFinished(_ op: Operation) {
        retire(op)
        guard let service = services[op.service] else { return }
        service.queryOp = nil
        if !service.roundAddresses.isEmpty { service.addresses = service.roundAddresses }
        report(service)
    }

    /// Sends `.found` when there is an address and anything changed since the last report.
    private func report(_ service: Tracked) {
        let now = service.snapshot
        guard !now.addresses.isEmpty, now != service.reported else { return }
        service.reported = now
        emit(.found(now))
    }
}
