import PeerlogModel

extension Replica {
    /// Envelope checks for one ingest batch: each distinct signed statement (a single envelope,
    /// or a batched run's header shared by its items) is verified once, on all cores; then each
    /// run item's Merkle path is checked (a few SHA-256). Each envelope's problem (nil: valid),
    /// and a valid run item's leaf.
    static func checkEnvelopes(_ envelopes: [Envelope]) -> [(problem: String?, leaf: [UInt8]?)] {
        struct Statement: Hashable, Sendable {
            let envelope: Envelope
            static func == (l: Statement, r: Statement) -> Bool {
                l.envelope.signature == r.envelope.signature && l.envelope.signedBytes == r.envelope.signedBytes
            }
            func hash(into h: inout Hasher) { h.combine(envelope.signature) }
        }
        var index = [Statement: Int]()
        var distinct = [Envelope]()
        let owner = envelopes.map { e in
            let s = Statement(envelope: e)
            if let i = index[s] { return i }
            index[s] = distinct.count
            distinct.append(e)
            return distinct.count - 1
        }
        let signatures = inParallel(distinct) { e in
            if case .invalid(let why) = e.verifySignature() { return why }
            return nil
        }
        let positions = inParallel(envelopes) { e -> (problem: String?, leaf: [UInt8]?)? in
            switch e.checkPosition() {
            case (.invalid(let why), _): (why, nil)
            case (.valid, let leaf?): (nil, leaf)
            case (.valid, nil): nil
            }
        }
        return envelopes.indices.map { i in
            if let problem = positions[i]?.problem { return (problem, nil) }
            if let problem = signatures[owner[i]] { return (problem, nil) }
            return (nil, positions[i]?.leaf)
        }
    }
}
