import PeerlogEncoding
import PeerlogModel
import PeerlogStore

extension Pipeline {
    /// One receipt from anywhere. `verified` is true when the caller already checked the
    /// receipt signature and the certificate chain (ingest verifies in parallel first).
    mutating func ingest(receipt r: Receipt, verified: Bool) throws {
        // A CID remembered as invalid is checked again (`isKnownReceipt`). A forger can mint
        // new junk anyway; the check costs one verification.
        if try db.isKnownReceipt(r.cid) {
            report.duplicates += 1
            return
        }
        if try isTombstoned(r.group) {
            try db.markProcessed(r.cid, group: r.group, outcome: .ignored, reason: "group is deleted", at: now)
            report.ignored += 1
            return
        }
        if !verified {
            let certOK =
                try caches.knownCertificates.contains(r.certificate.cid) || db.certificateKnown(r.certificate.cid)
            if case .invalid(let why) = r.verify(certificateVerified: certOK) {
                return try recordInvalid(r, reason: why)
            }
        }
        if r.author != local.device, let state = try committedState(r.group),
            state.revokedDevices.contains(GroupRevokedDevice(identity: r.identity, device: r.author))
        {
            // The device's revocation is committed here, and commits are contiguous: any envelope
            // still to come for this receipt orders it after the revocation, where the rules reject
            // it (§9.4). Refused now, as evidence; never committed, so nothing waits for it.
            return try recordInvalid(
                r, reason: "author device \(r.author) was revoked by identity \(r.identity) in this group")
        }
        if caches.knownCertificates.insert(r.certificate.cid).inserted {
            try db.insertCertificate(r.certificate)
            if r.certificate.identity == local.identity { try db.insertIdentityDevice(r.certificate, at: now) }
        }

        let held = try heldCounter(r.group, r.author)
        if r.counter <= held {
            try recordEquivocation(r)
            return
        }
        if r.counter > held + 1 {
            guard try pendingReceiptCount(r.group) < limits.maxPendingReceiptsPerGroup else {
                report.rejected.append(
                    (
                        r.cid,
                        "pending queue of the group is full (\(limits.maxPendingReceiptsPerGroup)); send it again later"
                    ))
                return
            }
            try db.insertPendingReceipt(
                r, reason: "waiting for author counters \(held + 1)...\(r.counter - 1)", at: now)
            caches.pendingReceiptCounts[r.group, default: 0] += 1
            report.queued += 1
            try request(.requestAuthorCounters(group: r.group, author: r.author, from: held + 1, to: r.counter - 1))
            return
        }
        try store(r)
        try drainAuthor(group: r.group, author: r.author, held: r.counter)
    }

    /// A receipt whose signature or certificate fails: never applied, remembered as evidence
    /// (claimed author and identity, the sending peer) and reported.
    mutating func recordInvalid(_ r: Receipt, reason: String) throws {
        try db.markInvalid(
            r.cid, group: r.group, author: r.author, identity: r.certificate.identity, peer: source, reason: reason,
            at: now)
        report.rejected.append((r.cid, reason))
        report.invalid.append(r.cid)
    }

    /// Stores a receipt whose counter is next for its author.
    mutating func store(_ r: Receipt) throws {
        try overlayBaseline(r.group)
        try db.insertReceipt(r, receivedAt: now)
        if r.type == "group.device_revoked",
            case .deviceRevoked(let revocation)? = try? GroupOperation(receiptType: r.type, body: r.body),
            revocation.identity == r.identity, revocation.verify().isValid,
            try db.revocationCount(of: revocation.identity) < Replica.maxRevocationsPerIdentity
        {
            // A revocation that travels in a group reaches the node's admission too (§3.6).
            try db.insertRevocation(revocation)
        }
        if r.type == EpochKeyShare.receiptType { try takeEpochKey(from: r) }
        caches.heldCounters[AuthorKey(group: r.group, author: r.author)] = r.counter
        caches.storedHere[r.cid] = r
        caches.storedSinceSettle.append(r)
        noteOverlayStored(r)
        report.stored += 1
        if gated { report.storedForGate.append(r) }
        report.events.append(.tentative(group: r.group, cid: r.cid, type: r.type))
        touch(r.group)
    }

    /// Moves an author's pending receipts into the store while their counters are contiguous.
    /// Reads only those at or below the next counter (a page at a time), never the ones that
    /// wait further on: a catch-up whose later counters arrived first would otherwise read
    /// them all again for every receipt stored in order before them.
    mutating func drainAuthor(group: GroupID, author: DeviceID, held: UInt64) throws {
        var held = held
        guard try pendingReceiptCount(group) > 0 else { return }
        var drained = false
        while true {
            let page = try db.pendingReceipts(group: group, author: author, upToCounter: held + 1, limit: 256)
            guard !page.isEmpty else { break }
            drained = true
            for item in page {
                try db.deletePendingReceipt(item.cid)
                caches.pendingReceiptCounts[group, default: 1] -= 1
                let r = try Receipt(encoded: item.encoded)
                // The page holds counters up to the next one only: each is that one or older.
                if r.counter <= held {
                    try recordEquivocation(r)
                } else {
                    try store(r)
                    held = r.counter
                }
            }
        }
        guard drained else { return }
        try db.clearBackfillRequests(group: group, kind: .author, subject: author.bytes, upTo: held)
    }

    /// A second receipt for a held (group, author, counter): keep it as evidence, flag the author.
    mutating func recordEquivocation(_ r: Receipt) throws {
        guard let existing = try db.receiptCID(group: r.group, author: r.author, counter: r.counter), existing != r.cid
        else {
            report.duplicates += 1
            return
        }
        try db.insertEquivocation(r, at: now)
        try overlayBaseline(r.group)
        try db.flagAuthor(group: r.group, author: r.author, fromCounter: r.counter, at: now)
        noteOverlayRebuild(r.group)
        try db.markProcessed(
            r.cid, group: r.group, outcome: .equivocation, reason: "same author counter as \(existing)", at: now)
        report.events.append(
            .equivocation(group: r.group, author: r.author, counter: r.counter, cids: [existing, r.cid].sorted()))
        touch(r.group)
    }
}
