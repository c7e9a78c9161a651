import PeerlogEncoding
import PeerlogModel

extension Replica {
    /// Envelope checks for one ingest batch: each distinct signed statement (a single envelope,
    /// or a batched run's header shared by its items) is verified once, on all cores; then each
    /// run item's Merkle path is checked (a few SHA-256). Each envelope's problem (nil: valid),
    /// and a valid run item's leaf.
    package static func checkEnvelopes(_ envelopes: [Envelope]) -> [(problem: String?, leaf: [UInt8]?)] {
        struct Statement: Hashable, Sendable {
            let envelope: Envelope
            static func == (l: Statement, r: Statement) -> Bool {
                l.envelope.signature == r.envelope.signature && l.envelope.signedBytes == r.envelope.signedBytes
            }
            func hash(into h: inout Hasher) { envelope.signature.withUnsafeBytes { h.combine(bytes: $0) } }
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
        let whole = wholeRunLeaves(envelopes)
        let positions = inParallel(Array(envelopes.indices)) { i -> (problem: String?, leaf: [UInt8]?)? in
            if let leaf = whole[i] { return (nil, leaf) }
            switch envelopes[i].checkPosition() {
            case (.invalid(let why), _): return (why, nil)
            case (.valid, let leaf?): return (nil, leaf)
            case (.valid, nil): return nil
            }
        }
        return envelopes.indices.map { i in
            if let problem = positions[i]?.problem { return (problem, nil) }
            if let problem = signatures[owner[i]] { return (problem, nil) }
            return (nil, positions[i]?.leaf)
        }
    }

    /// The leaf of each run item whose position is proven by its whole run, by index: when a
    /// batch holds every item of a run, the run's tree is built once (about two SHA-256 an item)
    /// instead of each item hashing its path up to the root (nine for a run of 256). An item is
    /// proven when the tree's head is the header's root and the item's leaf and path are the
    /// tree's: exactly the items `checkPosition` accepts. The rest, and every item of a run
    /// that is not whole or not consistent, are left to `checkPosition`.
    package static func wholeRunLeaves(_ envelopes: [Envelope]) -> [Int: [UInt8]] {
        var byRun = [HashedBytes: [Int]]()
        for (i, e) in envelopes.enumerated() where e.run != nil {
            byRun[HashedBytes(e.run!.payload), default: []].append(i)
        }
        var proven = [Int: [UInt8]]()
        for indices in byRun.values {
            guard let header = envelopes[indices[0]].run, indices.count >= Int(header.count) else { continue }
            // One receipt per position, the first claim; a second, different one fails below.
            var receipts = [CID?](repeating: nil, count: Int(header.count))
            for i in indices {
                let position = Int(envelopes[i].seq - header.firstSeq)
                if receipts[position] == nil { receipts[position] = envelopes[i].receipt }
            }
            guard receipts.allSatisfy({ $0 != nil }) else { continue }
            let leaves = receipts.enumerated().map {
                EnvelopeRun.leafHash(seq: header.firstSeq + UInt64($0.offset), receipt: $0.element!)
            }
            let tree = EnvelopeRun.tree(leaves: leaves)
            guard tree.root == header.root else { continue }
            for i in indices {
                let position = Int(envelopes[i].seq - header.firstSeq)
                guard envelopes[i].receipt == receipts[position], envelopes[i].path == tree.paths[position] else {
                    continue
                }
                proven[i] = leaves[position]
            }
        }
        return proven
    }
}
