import Dispatch
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogStore
import Synchronization

/// Receipts and envelopes from anywhere (peers, imports, captures): checked in parallel, then
/// stored and applied in batches.
extension Replica {
    /// Verifies, stores and applies receipts and envelopes from anywhere (peers, imports,
    /// captures). Work goes in batches of `limits.ingestBatchSize` receipts, each with the
    /// envelopes that name them (so commits keep pace with arrivals); signatures of the next
    /// batch are checked on the other cores while the current batch is written.
    /// `peer`: the device that sent them (recorded with any that fail verification).
    public func ingest(
        receipts: [Receipt], envelopes: [Envelope] = [], from peer: DeviceID? = nil
    ) throws -> IngestReport {
        let batches = Self.batches(receipts: receipts, envelopes: envelopes, size: limits.ingestBatchSize)
        var report = IngestReport()
        guard !batches.isEmpty else { return report }
        var prepared = try prepare(batches[0])
        for i in batches.indices {
            let current = prepared
            let next = i + 1 < batches.count ? batches[i + 1] : nil
            // Write this batch while the next one's signatures are checked: a fork and a join
            // on two threads, both done when this returns.
            let written = Mutex<Result<IngestReport, any Error>?>(nil)
            let checked = Mutex<Result<PreparedBatch, any Error>?>(nil)
            DispatchQueue.concurrentPerform(iterations: next == nil ? 1 : 2) { branch in
                if branch == 1, let next {
                    let r = Result { try self.prepare(next) }
                    checked.withLock { $0 = r }
                    return
                }
                let r = Result { try self.write(current, from: peer) }
                written.withLock { $0 = r }
            }
            report.merge(try written.withLock { $0! }.get())
            if let r = checked.withLock({ $0 }) { prepared = try r.get() }
        }
        hlc.withLock { clock in
            for r in receipts { clock.observe(r.hlc, wallMillis: self.clock()) }
        }
        return report
    }

    /// Verifies and writes several batches, each from its own peer (a session's messages that
    /// arrived together, several sessions' batches), in ONE transaction: one commit instead of
    /// one per batch. Each part is applied and settled as `ingest(receipts:envelopes:from:)`
    /// would apply it after the parts before it, and gets its own report, in order. The
    /// signatures of all parts are checked together on all cores first. Meant for parts of a
    /// sync message's size; a large import goes through `ingest(receipts:envelopes:from:)`,
    /// which splits it into transactions of `limits.ingestBatchSize`.
    public func ingest(parts: [IngestPart]) throws -> [IngestReport] {
        guard !parts.isEmpty else { return [] }
        let prepared = try prepare(parts: parts.map { ($0.receipts, $0.envelopes) })
        let reports = try write(parts: prepared.count) { p, i in
            // A run whose items came in several of these parts is whole in this transaction.
            if i == 0 { try p.keepWholeRuns(prepared) }
            try p.apply(prepared[i], from: parts[i].from)
        }
        hlc.withLock { clock in
            for part in parts { for r in part.receipts { clock.observe(r.hlc, wallMillis: self.clock()) } }
        }
        return reports
    }

    /// Stores and applies one prepared batch in one transaction.
    private func write(_ batch: PreparedBatch, from peer: DeviceID?) throws -> IngestReport {
        try write { p in
            try p.keepWholeRuns([batch])
            try p.apply(batch, from: peer)
        }
    }

    /// A batch with its duplicates removed and its signatures checked (nil: valid).
    struct PreparedBatch: Sendable {
        var receipts: [Receipt]
        var receiptChecks: [String?]
        var envelopes: [Envelope]
        var envelopeChecks: [String?]
        /// The leaf of each run item whose path reached its signed root (§3.5), else nil.
        var envelopeLeaves: [[UInt8]?]
        var duplicates: Int
    }

    /// Splits input into batches of receipts, each followed by the envelopes naming them (in
    /// seq order); envelopes for receipts not in the input come last.
    static func batches(
        receipts: [Receipt], envelopes: [Envelope], size: Int
    ) -> [(receipts: [Receipt], envelopes: [Envelope])] {
        var byCID = [CID: [Envelope]]()
        for e in envelopes { byCID[e.receipt, default: []].append(e) }
        var out = [(receipts: [Receipt], envelopes: [Envelope])]()
        for start in stride(from: 0, to: receipts.count, by: size) {
            let chunk = Array(receipts[start..<min(start + size, receipts.count)])
            var attached = [Envelope]()
            for r in chunk { if let es = byCID.removeValue(forKey: r.cid) { attached += es } }
            out.append((chunk, attached.sorted { $0.seq < $1.seq }))
        }
        let rest = byCID.values.flatMap { $0 }.sorted { $0.group != $1.group ? $0.group < $1.group : $0.seq < $1.seq }
        var start = 0
        while start < rest.count {
            // A batch that would end inside a batched run takes the rest of it (at most
            // `EnvelopeRun.maxLength` − 1 more): a run whole in one batch is stored once with its
            // leaves (§10), where a split one writes each item's path and empties it later.
            var end = min(start + size, rest.count)
            while end < rest.count, rest[end - 1].continuesItsRun, rest[end].run == rest[end - 1].run,
                rest[end].signature == rest[end - 1].signature, end - start < size + Int(EnvelopeRun.maxLength)
            {
                end += 1
            }
            out.append(([], Array(rest[start..<end])))
            start = end
        }
        return out
    }

    /// Drops known CIDs (before paying for signature checks) and verifies the rest in parallel.
    func prepare(_ batch: (receipts: [Receipt], envelopes: [Envelope])) throws -> PreparedBatch {
        try prepare(parts: [batch])[0]
    }

    /// `prepare` for several batches at once: one store read, and every fresh receipt's
    /// signature checked in one parallel pass (small batches would each use one core). A
    /// receipt repeated later counts as a duplicate there, as it would once the earlier one was
    /// written.
    func prepare(parts: [(receipts: [Receipt], envelopes: [Envelope])]) throws -> [PreparedBatch] {
        let all = parts.flatMap(\.receipts)
        let (known, verifiedCertificates) = try store.read { db in
            (
                try all.filter { try db.isKnownReceipt($0.cid) },
                try db.knownCertificates(Set(all.map(\.certificate.cid)))
            )
        }
        let knownSet = Set(known.map(\.cid))
        // By CID and signature: a forgery reuses a genuine payload (so its CID), and must not
        // make the genuine receipt after it, maybe from another peer, pass for a duplicate.
        var seen = [CID: [UInt8]]()
        let fresh = parts.map { part in
            part.receipts.filter { r in
                guard !knownSet.contains(r.cid) else { return false }
                if let first = seen[r.cid] { return first != r.signature }
                seen[r.cid] = r.signature
                return true
            }
        }
        var checks = Self.verifyInParallel(
            fresh.flatMap { $0 }, verifiedCertificates: verifiedCertificates, checkedAhead: signaturesCheckedAhead)[...]
        return zip(parts, fresh).map { part, fresh in
            let receiptChecks = Array(checks.prefix(fresh.count))
            checks = checks.dropFirst(fresh.count)
            let envelopeChecks = Self.checkEnvelopes(part.envelopes)
            return PreparedBatch(
                receipts: fresh, receiptChecks: receiptChecks, envelopes: part.envelopes,
                envelopeChecks: envelopeChecks.map(\.problem), envelopeLeaves: envelopeChecks.map(\.leaf),
                duplicates: part.receipts.count - fresh.count)
        }
    }

    /// Receipt signatures and certificate chains, checked on all cores. Certificates already
    /// in the store were verified when stored; each other distinct one is verified once.
    static func verifyInParallel(
        _ receipts: [Receipt], verifiedCertificates: Set<CID> = [], checkedAhead: SignatureMemo? = nil
    ) -> [String?] {
        let certOK = certificateChecks(receipts, verified: verifiedCertificates)
        let ahead = checkedAhead?.take(receipts) ?? Array(repeating: false, count: receipts.count)
        return inParallel(Array(zip(receipts, ahead))) { r, ahead in
            if case .invalid(let why) = certOK[r.certificate.cid]! { return why }
            if !ahead, case .invalid(let why) = r.verify(certificateVerified: true) { return why }
            return nil
        }
    }

    /// Checks the signatures of receipts that arrived and wait for their ingest, on the
    /// caller's thread, and remembers the valid ones, so the ingest (on the writer's thread)
    /// does not check them again: a node calls it as messages arrive, overlapping the checks
    /// with the writing of what came before. Optional: what it did not check, or checked and
    /// found invalid, the ingest checks as always.
    public func checkAhead(_ receipts: [Receipt]) {
        let certificates = Self.certificateChecks(receipts)
        let valid = receipts.filter {
            certificates[$0.certificate.cid] == .valid && $0.verify(certificateVerified: true) == .valid
        }
        signaturesCheckedAhead.insert(valid.map(SignatureMemo.Key.init))
    }

    /// Each distinct certificate of `receipts` checked once (those in `verified` taken as valid).
    static func certificateChecks(_ receipts: [Receipt], verified: Set<CID> = []) -> [CID: VerificationResult] {
        var certificates = [CID: VerificationResult]()
        for cid in verified { certificates[cid] = .valid }
        for r in receipts where certificates[r.certificate.cid] == nil {
            certificates[r.certificate.cid] = r.certificate.verify()
        }
        return certificates
    }

    /// Applies `check` to every element on all cores, keeping the order of results.
    static func inParallel<T: Sendable, R: Sendable>(_ items: [T], _ check: @Sendable (T) -> R?) -> [R?] {
        let results = Mutex([R?](repeating: nil, count: items.count))
        let chunks = max(1, min(items.count / 64, 32))
        DispatchQueue.concurrentPerform(iterations: chunks) { c in
            var local = [(Int, R)]()
            for i in stride(from: c, to: items.count, by: chunks) {
                if let result = check(items[i]) { local.append((i, result)) }
            }
            results.withLock { for (i, result) in local { $0[i] = result } }
        }
        return results.withLock { $0 }
    }
}

extension Pipeline {
    /// Keeps the leaves of each run whose every seq is among the checked envelopes of `batches`
    /// (`StoreDB.keepWholeRuns`), before any of them is written: once per transaction, over every
    /// batch it applies.
    mutating func keepWholeRuns(_ batches: [Replica.PreparedBatch]) throws {
        let checked = batches.flatMap { batch in
            zip(batch.envelopes, zip(batch.envelopeChecks, batch.envelopeLeaves)).compactMap { e, check in
                check.0 == nil ? (envelope: e, leaf: check.1) : nil
            }
        }
        try db.keepWholeRuns(checked, runs: &caches.envelopeRuns)
    }

    /// One prepared batch from `peer`: receipts that failed their checks are kept as evidence,
    /// envelopes that failed are refused, the rest is ingested (after `keepWholeRuns`).
    mutating func apply(_ batch: Replica.PreparedBatch, from peer: DeviceID?) throws {
        report.duplicates += batch.duplicates
        source = peer
        for (r, problem) in zip(batch.receipts, batch.receiptChecks) {
            if let problem {
                try recordInvalid(r, reason: problem)
            } else {
                try ingest(receipt: r, verified: true)
            }
        }
        for (e, problem) in zip(batch.envelopes, batch.envelopeChecks) {
            if let problem {
                report.rejected.append((e.receipt, problem))
            } else {
                try ingest(envelope: e, verified: true)
            }
        }
    }
}
