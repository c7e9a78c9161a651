import Foundation
import PeerlogNode

/// The human form of `peerlog status`.
enum StatusText {
    static func render(_ s: NodeStatus, now: UInt64 = UInt64(Date().timeIntervalSince1970 * 1000)) -> String {
        var out = "device \(s.device) (\(s.name)), identity \(s.identity)\n"
        if let revoked = s.revoked { out += "REVOKED: \(revoked); peers refuse this device\n" }
        out += "listening on \(s.listening ?? "nothing (dial only)")\n"
        if let c = s.capture {
            out +=
                "capturing to \(c.path): \(c.records) records\(c.omitBodies ? ", bodies omitted" : "") (decrypted traffic: keep it private)\n"
        }
        out += "peers: \(s.peers.isEmpty ? "none" : "")\n"
        for p in s.peers {
            var line = "  \(p.address)  \(p.state)  \(p.direction)"
            if let device = p.device { line += "  \(device)" + (p.name.map { " (\($0))" } ?? "") }
            if let since = p.connectedSince { line += "  for \(duration(now > since ? now - since : 0))" }
            if let retry = p.retryInMs { line += "  retry in \(duration(retry))" }
            if let error = p.lastError { line += "  last error: \(error)" }
            out += line + "\n"
        }
        out += "groups: \(s.groups.isEmpty ? "none" : "")\n"
        for g in s.groups {
            out += "  \(g.name)  \(g.id)  committed \(g.committed)  tentative \(g.tentative)\n"
            if let q = g.sequencer { out += "    sequencer: " + sequencerLine(q) + "\n" }
            if let w = g.waitingForKey { out += "    encrypted end to end; \(w) waiting for a key\n" }
            if let why = g.maintenanceSkipped { out += "    snapshot/compaction skipped: \(why)\n" }
            if let o = g.offline { out += "    " + offlineLine(o) + "\n" }
            for p in g.peers {
                let theirs = p.peerCommitted.map(String.init) ?? "?"
                out +=
                    "    with \(p.device): peer committed \(theirs), behind \(p.behind), ahead \(p.ahead)\(p.caughtUp ? ", caught up" : "")\n"
            }
        }
        if !s.recentlyClosed.isEmpty {
            out += "recently closed:\n"
            for c in s.recentlyClosed.suffix(5) {
                out += "  \(c.device ?? c.address)  \(duration(now > c.at ? now - c.at : 0)) ago: \(c.reason)\n"
            }
        }
        if let refusals = s.refusals, !refusals.isEmpty {
            out += "refused by a sequencer:\n"
            for r in refusals.suffix(5) {
                out +=
                    "  \(r.cid) of group \(r.group) by \(r.by)  \(duration(now > r.at ? now - r.at : 0)) ago: \(r.reason)\n"
            }
        }
        if let rejected = s.rejected, !rejected.isEmpty {
            out +=
                "rejected from peers (\(s.rejectedTotal ?? rejected.count) since start; `peerlog dead-letters` lists invalid ones):\n"
            for r in rejected.suffix(5) {
                let claims = r.author.map { " claiming author \($0)" } ?? ""
                out +=
                    "  \(r.invalid ? "INVALID " : "")\(r.cid) of group \(r.group)\(claims) from \(r.from)  \(duration(now > r.at ? now - r.at : 0)) ago: \(r.reason)\n"
            }
        }
        if let blobs = s.blobs,
            !blobs.fetching.isEmpty || blobs.receivedBytes > 0 || blobs.servedBytes > 0 || blobs.heldBytes > 0
        {
            out += "blobs: \(blobs.receivedBytes) bytes received, \(blobs.servedBytes) served since start\n"
            out +=
                "  \(blobs.heldBytes) bytes held, \(blobs.cachedBytes) of them fetched (cache limit \(blobs.cacheLimitBytes))\n"
            for f in blobs.fetching {
                let share = f.size == 0 ? 100 : Int(f.heldBytes * 100 / f.size)
                out += "  fetching \(f.blob) of group \(f.group): \(f.heldBytes) of \(f.size) bytes (\(share)%)\n"
            }
        }
        if let pairing = s.pairing, !pairing.open.isEmpty || !pairing.recent.isEmpty {
            out += "pairing:\n"
            for o in pairing.open {
                let left = o.expiresAt > now ? duration(o.expiresAt - now) : "0 s"
                out +=
                    "  session \(o.nameplate) (\(o.purpose)) open at \(o.address): \(o.attemptsLeft) tries left, \(left) left\n"
            }
            for e in pairing.recent.suffix(5) {
                out +=
                    "  session \(e.nameplate) \(e.outcome) (\(e.remote))  \(duration(now > e.at ? now - e.at : 0)) ago: \(e.detail)\n"
            }
        }
        return out
    }

    static func duration(_ ms: UInt64) -> String {
        if ms < 10_000 { return String(format: "%.1f s", Double(ms) / 1000) }
        if ms < 120_000 { return "\(ms / 1000) s" }
        if ms < 7_200_000 { return "\(ms / 60_000) min" }
        return "\(ms / 3_600_000) h"
    }

    /// This device's headroom against the offline limits: waiting writes and the oldest's age.
    static func offlineLine(_ o: OfflineStatus) -> String {
        let age = o.oldestAgeMs.map { "oldest \(duration($0)) of \(duration(o.maxAgeMs)) allowed" } ?? "none waiting"
        return
            "offline limits: \(o.waiting) of \(o.maxWaiting) own writes waiting (\(max(0, o.maxWaiting - o.waiting)) left); \(age)"
    }

    static func sequencerLine(_ q: SequencerStatus) -> String {
        var line: String
        switch q.authority {
        case .elected: line = "elected among \(q.devices.count) voters"
        case .relay: line = "relay \(q.devices.first ?? "?") at \(q.address ?? "?")"
        default: line = "solo \(q.devices.first ?? "?")"
        }
        if let role = q.role, let term = q.term {
            line += "; here \(role) in term \(term), leader \(q.leader ?? "unknown")"
        }
        return line + "; \(q.commitLag) waiting for a seq"
    }
}
