// Everything that calls the DNS-SD library. Confined to Discovery's thread: the library's
// refs are not thread-safe, and callbacks arrive only inside DNSServiceProcessResult.
import CDNSSD
import Foundation

/// The DNS-SD library calls of one Discovery: registration, browsing, and (in
/// `DNSSDSession+Tracking.swift`) resolving what it browsed. One per daemon connection.
final class DNSSDSession {
    static let noError = DNSServiceErrorType(kDNSServiceErr_NoError)
    static let nameConflict = DNSServiceErrorType(kDNSServiceErr_NameConflict)
    static let maxRenames = 50

    let type: String
    let emit: @Sendable (DiscoveryEvent) -> Void
    /// Set when the register or browse ref fails: the daemon connection is gone.
    var failure: DNSServiceErrorType?
    var advertisement: ServiceAdvertisement?
    var registerOp: DNSSDOperation?
    var registeredName: String?
    /// Name conflicts so far; the next registration uses "name #(conflicts + 1)".
    var conflicts = 0
    var services: [String: TrackedService] = [:]
    private var live: [ObjectIdentifier: DNSSDOperation] = [:]
    private var retiredOps: [DNSSDOperation] = []

    init(type: String, emit: @escaping @Sendable (DiscoveryEvent) -> Void) {
        self.type = type
        self.emit = emit
    }

    /// Registers and/or browses; returns the first error (the daemon is then unusable).
    func setUp(advertise: ServiceAdvertisement?, browse: Bool) -> DNSServiceErrorType? {
        if let advertise {
            self.advertisement = advertise
            if let err = register() { return err }
        }
        if browse {
            let err = begin(.browse, service: "") { ref, ctx in
                DNSServiceBrowse(
                    ref, 0, 0, self.type, nil,
                    { _, flags, interface, err, name, type, domain, ctx in
                        guard let op = DNSSDOperation.from(ctx) else { return }
                        op.session.browseReply(
                            flags: flags, interface: interface, error: err, name: name, type: type, domain: domain)
                    }, ctx)
            }
            if let err { return err }
        }
        return nil
    }

    /// Registers the advertisement, renaming it "name #2", "name #3"... on conflict: avahi
    /// renames only after a conflict on the network, and refuses a name already registered
    /// with the same daemon (another process on this host) with kDNSServiceErr_NameConflict.
    private func register() -> DNSServiceErrorType? {
        guard let ad = advertisement else { return nil }
        while true {
            let txt = TXTRecord.encode(ad.txt)
            let port = UInt16(clamping: ad.port).bigEndian
            let base = ad.name.isEmpty ? "peerlog" : ad.name
            let name: String? = conflicts == 0 ? (ad.name.isEmpty ? nil : ad.name) : "\(base) #\(conflicts + 1)"
            let err = begin(.register, service: "") { ref, ctx in
                DNSServiceRegister(
                    ref, 0, 0, name, self.type, nil, nil, port, UInt16(txt.count), txt,
                    { _, _, err, name, _, _, ctx in
                        DNSSDOperation.from(ctx)?.session.registerReply(err, name: name.map { String(cString: $0) })
                    }, ctx)
            }
            guard err == DNSSDSession.nameConflict, conflicts < DNSSDSession.maxRenames else { return err }
            conflicts += 1
        }
    }

    /// Starts one operation; `call` gets the ref slot and the context pointer.
    @discardableResult
    func begin(
        _ kind: DNSSDOperation.Kind, service: String,
        _ call: (UnsafeMutablePointer<DNSServiceRef?>, UnsafeMutableRawPointer) -> DNSServiceErrorType
    ) -> DNSServiceErrorType? {
        let op = DNSSDOperation(kind: kind, service: service, session: self)
        var ref: DNSServiceRef?
        let err = call(&ref, op.context)
        guard err == DNSSDSession.noError, let ref else {
            return err == DNSSDSession.noError ? DNSServiceErrorType(kDNSServiceErr_Unknown) : err
        }
        op.ref = ref
        live[ObjectIdentifier(op)] = op
        switch kind {
        case .resolve: services[service]?.resolveOp = op
        case .query: services[service]?.queryOp = op
        case .register: registerOp = op
        case .browse: break
        }
        return nil
    }

    /// Marks an operation dead now (its callbacks are ignored) and frees it after the current
    /// batch, since it may be the ref whose DNSServiceProcessResult is on the stack.
    func retire(_ op: DNSSDOperation?) {
        guard let op, !op.retired else { return }
        op.retired = true
        retiredOps.append(op)
    }

    /// One poll round: process every ref whose socket is readable (calling
    /// DNSServiceProcessResult on any other ref blocks, and deadlocks with avahi), then time
    /// out and start resolves and queries.
    func iterate(wakeFD: Int32, timeoutMilliseconds: Int32) {
        let batch = Array(live.values)
        var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        fds += batch.map { pollfd(fd: DNSServiceRefSockFD($0.ref), events: Int16(POLLIN), revents: 0) }
        if poll(&fds, nfds_t(fds.count), timeoutMilliseconds) > 0 {
            for (i, op) in batch.enumerated() where fds[i + 1].revents != 0 && !op.retired {
                let err = DNSServiceProcessResult(op.ref)
                if err != DNSSDSession.noError { operationFailed(op, err) }
            }
        }
        freeRetired()
        housekeeping(now: .now)
        freeRetired()
    }

    private func freeRetired() {
        for op in retiredOps {
            live[ObjectIdentifier(op)] = nil
            if let ref = op.ref { DNSServiceRefDeallocate(ref) }
            op.ref = nil
        }
        retiredOps.removeAll()
    }

    func operationFailed(_ op: DNSSDOperation, _ err: DNSServiceErrorType) {
        switch op.kind {
        case .register, .browse: failure = failure ?? err
        case .resolve: resolveFailed(op)
        case .query: queryFinished(op)
        }
    }

    /// Frees every ref; with `reportLost`, reports every found service as lost.
    func tearDown(reportLost: Bool) {
        for op in live.values { retire(op) }
        freeRetired()
        if reportLost {
            for service in services.values.sorted(by: { $0.name < $1.name }) where service.reported != nil {
                emit(.lost(name: service.name))
            }
        }
        services.removeAll()
    }

    private func registerReply(_ err: DNSServiceErrorType, name: String?) {
        if err == DNSSDSession.nameConflict, conflicts < DNSSDSession.maxRenames {
            retire(registerOp)
            conflicts += 1
            if let err = register() { failure = failure ?? err }
            return
        }
        guard err == DNSSDSession.noError else {
            failure = failure ?? err
            return
        }
        // avahi renames on conflict and calls again with the new name.
        if let name, name != registeredName {
            registeredName = name
            emit(.registered(name: name))
        }
    }
}
