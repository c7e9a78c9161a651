// Browsed services: resolve each to host/port/TXT, then query the host's A records.
// Resolves and address queries are short-lived (each ref is a daemon connection with its own
// thread in avahi's compat layer) and repeated every minute to notice changes.
import CDNSSD

extension DNSSDSession {
    static let maxTracked = 256
    /// Resolves and queries open at once, each a daemon connection.
    static let maxInFlight = 16
    static let refreshInterval: Duration = .seconds(60)
    static let resolveTimeout: Duration = .seconds(10)
    /// A query round ends this long after its first answer (later A records of a host come in
    /// the same mDNS response) or after `queryTimeout` without one.
    static let querySettle: Duration = .milliseconds(300)
    static let queryTimeout: Duration = .seconds(3)

    func browseReply(
        flags: DNSServiceFlags, interface: UInt32, error: DNSServiceErrorType, name: UnsafePointer<CChar>?,
        type: UnsafePointer<CChar>?, domain: UnsafePointer<CChar>?
    ) {
        guard error == DNSSDSession.noError else {
            failure = failure ?? error
            return
        }
        guard let name, let type, let domain else { return }
        let key = String(cString: name)
        if flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0 {
            if let known = services[key] {
                known.interfaces.insert(interface)
            } else if services.count < DNSSDSession.maxTracked {
                services[key] = TrackedService(
                    name: key, type: String(cString: type), domain: String(cString: domain), interface: interface)
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
        for service in services.values where inFlight < DNSSDSession.maxInFlight {
            guard service.resolveOp == nil, service.queryOp == nil, now >= service.nextResolve else { continue }
            service.deadline = now + DNSSDSession.resolveTimeout
            service.nextResolve = now + DNSSDSession.refreshInterval
            let err = begin(.resolve, service: service.name) { ref, ctx in
                DNSServiceResolve(
                    ref, 0, service.interfaceIndex, service.name, service.type, service.domain,
                    { _, _, interface, err, _, host, port, txtLen, txt, ctx in
                        guard let op = DNSSDOperation.from(ctx) else { return }
                        let txtBytes = txt.map { Array(UnsafeBufferPointer(start: $0, count: Int(txtLen))) } ?? []
                        op.session.resolveReply(
                            op, error: err, interface: interface, host: host.map { String(cString: $0) },
                            port: Int(UInt16(bigEndian: port)), txt: txtBytes)
                    }, ctx)
            }
            if err == nil { inFlight += 1 } else { service.nextResolve = now + DNSSDSession.resolveTimeout }
        }
    }

    func resolveFailed(_ op: DNSSDOperation) {
        retire(op)
        guard let service = services[op.service] else { return }
        service.resolveOp = nil
        service.nextResolve = .now + DNSSDSession.resolveTimeout
    }

    private func resolveReply(
        _ op: DNSSDOperation, error: DNSServiceErrorType, interface: UInt32, host: String?, port: Int, txt: [UInt8]
    ) {
        guard error == DNSSDSession.noError, let host, !host.isEmpty, let service = services[op.service] else {
            return resolveFailed(op)
        }
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
        service.deadline = .now + DNSSDSession.queryTimeout
        let err = begin(.query, service: service.name) { ref, ctx in
            DNSServiceQueryRecord(
                ref, 0, interface, host, UInt16(kDNSServiceType_A), UInt16(kDNSServiceClass_IN),
                { _, flags, _, err, _, rrtype, _, rdlen, rdata, _, ctx in
                    guard let op = DNSSDOperation.from(ctx) else { return }
                    guard err == DNSSDSession.noError else { return op.session.queryFinished(op) }
                    guard rrtype == UInt16(kDNSServiceType_A), rdlen == 4, let rdata else { return }
                    let b = rdata.assumingMemoryBound(to: UInt8.self)
                    op.session.addressReply(
                        op, address: "\(b[0]).\(b[1]).\(b[2]).\(b[3])",
                        added: flags & DNSServiceFlags(kDNSServiceFlagsAdd) != 0)
                }, ctx)
        }
        if err != nil { service.nextResolve = .now + DNSSDSession.resolveTimeout }
    }

    private func addressReply(_ op: DNSSDOperation, address: String, added: Bool) {
        guard let service = services[op.service] else { return queryFinished(op) }
        if added {
            if !service.roundAddresses.contains(address) { service.roundAddresses.append(address) }
            service.deadline = min(service.deadline, .now + DNSSDSession.querySettle)
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
    func queryFinished(_ op: DNSSDOperation) {
        retire(op)
        guard let service = services[op.service] else { return }
        service.queryOp = nil
        if !service.roundAddresses.isEmpty { service.addresses = service.roundAddresses }
        report(service)
    }

    /// Sends `.found` when there is an address and anything changed since the last report.
    private func report(_ service: TrackedService) {
        let now = service.snapshot
        guard !now.addresses.isEmpty, now != service.reported else { return }
        service.reported = now
        emit(.found(now))
    }
}
