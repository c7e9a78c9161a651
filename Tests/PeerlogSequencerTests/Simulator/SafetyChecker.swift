@testable import PeerlogSequencer

/// Checks Raft's safety properties against every effect as it happens, keeping the
/// history it needs (it also plays each voter's durable store, rebuilt only from
/// `persist` effects, which is what a restarted voter is given).
struct SafetyChecker {
    private struct Key: Hashable {
        var seq: UInt64
        var term: UInt64
    }

    private struct Identity: Equatable {
        var item: String
        var prevTerm: UInt64
    }

    let base: UInt64
    /// Prefix for failure messages (seed, tick).
    var context = ""
    private(set) var failures: [String] = []
    /// Election safety: the leader of every term ever seen.
    private var leaderOfTerm: [UInt64: Int] = [:]
    /// State machine safety: items committed at base+1, base+2, … and the lowest term of a
    /// leader that committed each.
    private(set) var committed: [String] = []
    private var commitTerm: [UInt64] = []
    /// Per node: what its driver was told is committed (kept across crashes).
    private(set) var reported: [[String]]
    /// Log matching: (seq, term) → (item, term before it) over every log ever written.
    private var identity: [Key: Identity] = [:]
    /// Per node: the durable state and its item index.
    private(set) var disks: [Disk]
    private var diskIndex: [[String: UInt64]]
    private var highestTerm: [UInt64]
    /// Coverage counters, so a run can show it exercised elections and conflicts.
    private(set) var truncatedEntries = 0
    var electedTerms: Int { leaderOfTerm.count }

    init(nodes: Int, base: UInt64) {
        self.base = base
        reported = Array(repeating: [], count: nodes)
        disks = Array(repeating: Disk(), count: nodes)
        diskIndex = Array(repeating: [:], count: nodes)
        highestTerm = Array(repeating: 0, count: nodes)
    }

    mutating func fail(_ message: String) {
        if failures.count < 20 { failures.append("\(context): \(message)") }
    }

    /// Checks one call's effects from `node`; `machines` is every voter after the call.
    mutating func observe(_ effects: [Eff], node: Int, machines: [Seq?]) {
        guard let machine = machines[node] else { return fail("effects from a crashed node") }
        for (position, effect) in effects.enumerated() {
            switch effect {
            case .persist(let change):
                if position != 0 { fail("node \(node): persist at position \(position)") }
                applyPersist(change, node: node)
            case .roleChanged(let role, let term, let leader):
                if role != machine.role || term != machine.term || leader != machine.leader {
                    fail("node \(node): roleChanged does not match the state after the call")
                }
                if role == .leader { noteLeader(machine, node: node) }
            case .committed(let entries, let asLeader):
                applyCommitted(entries, asLeader: asLeader, node: node, machines: machines)
            case .violation(let error):
                fail("node \(node): \(error)")
            case .send:
                break
            }
        }
        let disk = disks[node]
        if machine.term != disk.currentTerm || machine.votedFor != disk.votedFor
            || machine.lastSeq != (disk.entries.last?.seq ?? base) || machine.lastTerm != (disk.entries.last?.term ?? 0)
        {
            fail("node \(node): in-memory state ahead of or behind its durable state")
        }
    }

    /// Election safety for whoever currently leads, and monotonic terms.
    mutating func checkLeaders(_ machines: [Seq?]) {
        for (node, machine) in machines.enumerated() {
            guard let machine else { continue }
            if machine.term < highestTerm[node] { fail("node \(node): term went back") }
            highestTerm[node] = max(highestTerm[node], machine.term)
            if machine.role == .leader, leaderOfTerm[machine.term] != node {
                fail(
                    "node \(node) leads term \(machine.term) unannounced or beside \(String(describing: leaderOfTerm[machine.term]))"
                )
            }
        }
    }

    /// The durable store equals the voter's own view of its persistent state.
    mutating func checkDisk(_ machine: Seq, node: Int) {
        if disks[node] != machine.persistentState { fail("node \(node): durable state differs from persistentState") }
    }

    private mutating func noteLeader(_ machine: Seq, node: Int) {
        if let other = leaderOfTerm[machine.term], other != node {
            fail("two leaders in term \(machine.term): \(other) and \(node)")
        }
        leaderOfTerm[machine.term] = node
        // Leader completeness: entries committed in earlier terms are in the new leader's log.
        for (offset, item) in committed.enumerated() where commitTerm[offset] < machine.term {
            let seq = base + 1 + UInt64(offset)
            if machine.entry(at: seq)?.item != item {
                fail("leader \(node) of term \(machine.term) lacks committed seq \(seq)")
            }
        }
    }

    private mutating func applyPersist(_ change: Change, node: Int) {
        var disk = disks[node]
        if change.currentTerm < disk.currentTerm { fail("node \(node): persisted term went back") }
        if change.currentTerm == disk.currentTerm, let vote = disk.votedFor, change.votedFor != vote {
            fail("node \(node): changed its vote in term \(disk.currentTerm)")
        }
        disk.currentTerm = change.currentTerm
        disk.votedFor = change.votedFor
        if let keep = change.truncatedAfter {
            if keep < base + UInt64(reported[node].count) {
                fail("node \(node): truncated committed entries after \(keep)")
            }
            while let last = disk.entries.last, last.seq > keep {
                truncatedEntries += 1
                diskIndex[node][last.item] = nil
                disk.entries.removeLast()
            }
        }
        for entry in change.appended {
            let prevTerm = disk.entries.last?.term ?? 0
            if entry.seq != (disk.entries.last?.seq ?? base) + 1 {
                fail("node \(node): non-contiguous append at \(entry.seq)")
            }
            if let seq = diskIndex[node][entry.item] {
                fail("node \(node): \(entry.item) at seq \(seq) and \(entry.seq)")
            }
            let offset = Int(entry.seq - base - 1)
            if offset < reported[node].count, reported[node][offset] != entry.item {
                fail("node \(node): committed seq \(entry.seq) changed")
            }
            let key = Key(seq: entry.seq, term: entry.term)
            let id = Identity(item: entry.item, prevTerm: prevTerm)
            if let known = identity[key], known != id {
                fail("log matching broken at seq \(entry.seq) term \(entry.term)")
            }
            identity[key] = id
            diskIndex[node][entry.item] = entry.seq
            disk.entries.append(entry)
        }
        disks[node] = disk
    }

    private mutating func applyCommitted(_ entries: [Ent], asLeader: Bool, node: Int, machines: [Seq?]) {
        let machine = machines[node]!
        if entries.isEmpty { fail("node \(node): empty committed effect") }
        if asLeader != (machine.role == .leader) { fail("node \(node): asLeader is \(asLeader) for a \(machine.role)") }
        for entry in entries {
            if machine.entry(at: entry.seq) != entry {
                fail("node \(node): committed seq \(entry.seq) is not in its log")
            }
            let offset = Int(entry.seq - base - 1)
            if offset < reported[node].count {
                if reported[node][offset] != entry.item { fail("node \(node): seq \(entry.seq) reported as two items") }
            } else if offset == reported[node].count {
                reported[node].append(entry.item)
            } else {
                fail("node \(node): commit reports skip to seq \(entry.seq)")
            }
            if offset < committed.count {
                if committed[offset] != entry.item {
                    fail("seq \(entry.seq) committed as \(committed[offset]) and \(entry.item)")
                }
                if asLeader { commitTerm[offset] = min(commitTerm[offset], machine.term) }
            } else if offset == committed.count, asLeader {
                committed.append(entry.item)
                commitTerm.append(machine.term)
            } else {
                fail("node \(node): seq \(entry.seq) reported committed before any leader committed it")
            }
        }
        guard asLeader else { return }
        // The commit rule itself (Raft §5.4.2): the newest entry committed is of the leader's term
        // and is durable on a quorum of voters.
        if let last = entries.last, last.term != machine.term {
            fail(
                "leader \(node) of term \(machine.term) committed seq \(last.seq) of term \(last.term) by counting replicas"
            )
        }
        for entry in entries {
            let offset = Int(entry.seq - base - 1)
            let holders = disks.count { offset < $0.entries.count && $0.entries[offset] == entry }
            if holders < disks.count / 2 + 1 {
                fail("seq \(entry.seq) committed while durable on \(holders) voters only")
            }
        }
        // Leader completeness also for leaders elected before this commit but in later terms.
        for case let other? in machines where other.role == .leader && other.term > machine.term {
            for entry in entries where other.entry(at: entry.seq)?.item != entry.item {
                fail("leader of term \(other.term) lacks seq \(entry.seq) committed in term \(machine.term)")
            }
        }
    }
}
