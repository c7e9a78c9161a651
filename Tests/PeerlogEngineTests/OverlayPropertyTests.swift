import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// The maintained tentative view equals a fold from scratch after every step of random
/// schedules: local writes on three members, partial syncs in any order with duplicates, a relay
/// that commits in random (reordering) order, role and membership changes, sequencer changes
/// between the relay and a solo owner, equivocation, a write by a binary that does not maintain
/// the view, a pre-migration store (and the daemon's start building what is missing), and
/// restarts of a file-backed replica.
@Suite struct OverlayPropertyTests {
    /// `PEERLOG_OVERLAY_SCHEDULES` schedules (default 24); `PEERLOG_SEED` reruns one.
    @Test func maintainedViewEqualsReplayAfterEveryStep() throws {
        let env = ProcessInfo.processInfo.environment
        let count = UInt64(env["PEERLOG_OVERLAY_SCHEDULES"].flatMap(Int.init) ?? 24)
        let seeds = env["PEERLOG_SEED"].flatMap(UInt64.init).map { [$0] } ?? Array(1...count)
        try run(seeds: seeds, entityWrites: false)
    }

    /// The same with `entity.write`s among the writes (docs/PROTOCOL.md §9.7): their steps are
    /// applied at the end of the order or the group's view is rebuilt, and either way it equals a
    /// fold. `PEERLOG_OVERLAY_SCHEDULES` schedules (default 12); `PEERLOG_SEED` reruns one.
    @Test func maintainedViewWithEntityWritesEqualsReplayAfterEveryStep() throws {
        let env = ProcessInfo.processInfo.environment
        let count = UInt64(env["PEERLOG_OVERLAY_SCHEDULES"].flatMap(Int.init) ?? 12)
        let seeds = env["PEERLOG_SEED"].flatMap(UInt64.init).map { [$0] } ?? Array(1...count)
        try run(seeds: seeds, entityWrites: true)
    }

    func run(seeds: [UInt64], entityWrites: Bool) throws {
        for seed in seeds {
            var schedule = try OverlaySchedule(seed: seed, entityWrites: entityWrites)
            do {
                try schedule.run(steps: 120)
            } catch {
                Issue.record(
                    "overlay schedule seed \(seed) failed at step \(schedule.step) (\(schedule.lastAction)) — rerun with PEERLOG_SEED=\(seed): \(error)"
                )
                return
            }
        }
    }
}

/// One random schedule over a relay-sequenced group.
struct OverlaySchedule {
    var rng: SeededRandom
    let alice: TestReplica, bob: TestReplica, carol: TestReplica
    let relay: LocalDevice
    /// A device of bob's identity that writes only through the store (as an older binary would).
    let bobOld: LocalDevice
    var bobOldCounter: UInt64 = 0
    let observerDevice: LocalDevice
    let observerClock = ManualClock()
    let observerPath: String
    var observer: Replica
    let group: GroupID
    var step = 0
    var lastAction = "setup"
    /// Replicas whose view was changed behind the engine's back and not rebuilt since.
    var unmaintained = Set<String>()
    /// Where the change log of a pre-migration store starts: its committed entities (with no
    /// maintained view yet, the first rows compare with those).
    var changeLogBase = [String: [EntityValue]]()

    /// Whether writes include `entity.write`s (conditions, counters, sets, field merges).
    let entityWrites: Bool

    /// The versions `w` sees, for version conditions.
    func versions(_ w: TestReplica) throws -> [CID] {
        try w.replica.entities(in: group, view: .tentative).map(\.cid)
    }

    init(seed: UInt64, entityWrites: Bool = false) throws {
        self.entityWrites = entityWrites
        rng = SeededRandom(seed: seed)
        alice = try TestReplica("alice", seed: seed)
        bob = try TestReplica("bob", seed: seed)
        carol = try TestReplica("carol", seed: seed)
        relay = try LocalDevice.deterministic(seed: Array("relay/\(seed)".utf8), name: "relay", createdAt: 1)
        bobOld = try bob.device.additionalDevice(name: "bob-old", createdAt: 1)
        observerDevice = try LocalDevice.deterministic(
            seed: Array("observer/\(seed)".utf8), name: "observer", createdAt: 1)
        observerPath =
            NSTemporaryDirectory() + "overlay-property-\(getpid())-\(seed)\(entityWrites ? "-writes" : "").sqlite"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: observerPath + suffix) }
        let clock = observerClock
        observer = try Replica(path: observerPath, device: observerDevice, clock: { clock.now() })
        group = try groupWith(
            owner: alice, members: [bob, carol],
            id: GroupID(bytes: Array(SHA256.hash(Array("overlay \(seed)".utf8)).prefix(16))))
        try alice.replica.append(.sequencerChanged(.relay(key: relay.device, address: "127.0.0.1:9")), to: group)
        try deliver(alice, to: observer, fraction: 1)
    }

    var writers: [TestReplica] { [alice, bob, carol] }
    var replicas: [(String, Replica)] {
        [("alice", alice.replica), ("bob", bob.replica), ("carol", carol.replica), ("observer", observer)]
    }

    mutating func run(steps: Int) throws {
        for i in 0..<steps {
            step = i
            try randomStep()
            try checkAll()
        }
        // The next write rebuilds a view that was changed behind the engine's back.
        step = steps
        lastAction = "final write reaches the observer"
        _ = try? alice.replica.append(.entityPut(key: "final", value: 1), to: group)
        try deliver(alice, to: observer, fraction: 1)
        try checkAll()
        if !unmaintained.isEmpty { throw ScheduleError("\(unmaintained.sorted()): view not rebuilt by a write") }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: observerPath + suffix) }
    }

    mutating func randomStep() throws {
        let roll = Int.random(in: 0..<100, using: &rng)
        let w = writers.randomElement(using: &rng)!
        w.clock.advance(UInt64.random(in: 0...20, using: &rng))
        observerClock.advance(5)
        let key = ["a", "b", "c", "d", "e"].randomElement(using: &rng)!
        switch roll {
        case 0..<40:
            lastAction = "\(w.device.certificate.name) writes \(key)"
            let op: GroupOperation =
                entityWrites && Bool.random(using: &rng)
                ? randomEntityWrite(&rng, keys: ["a", "b", "c"], step: step, versions: try versions(w))
                : Int.random(in: 0..<5, using: &rng) == 0
                    ? .entityDelete(key: key) : .entityPut(key: key, value: .int(Int64(step)))
            if case .entityWrite = op { lastAction = "\(w.device.certificate.name) entity.write" }
            _ = try? w.replica.append(op, to: group)
        case 40..<48:
            let ops: [GroupOperation] = [
                .renamed(name: "n\(step)"), .roleChanged(identity: bob.identity, role: .admin),
                .roleChanged(identity: bob.identity, role: .member),
                .memberRemoved(identity: carol.identity), .memberAdded(identity: carol.identity, role: .member),
                .sequencerChanged(.solo(alice.device.device)),
                .sequencerChanged(.relay(key: relay.device, address: "127.0.0.1:9")),
            ]
            let op = ops.randomElement(using: &rng)!
            lastAction = "alice \(op.receiptType)"
            _ = try? alice.replica.append(op, to: group)
        case 48..<50:
            lastAction = "carol accepts or leaves"
            _ = try? carol.replica.append(Bool.random(using: &rng) ? .inviteAccepted : .memberLeft, to: group)
        case 50..<72:
            let from = writers.randomElement(using: &rng)!
            let to = Int.random(in: 0..<4, using: &rng) == 0 ? nil : writers.randomElement(using: &rng)!
            lastAction = "sync \(from.device.certificate.name) → \(to?.device.certificate.name ?? "observer")"
            try deliver(from, to: to?.replica ?? observer, fraction: Double.random(in: 0.2...1, using: &rng))
        case 72..<84:
            lastAction = "relay commits"
            try relayCommits(Int.random(in: 1...4, using: &rng))
        case 84..<88:
            lastAction = "bob equivocates"
            try equivocate()
        case 88..<91:
            lastAction = "an older binary stores a receipt"
            try olderBinaryWrite()
        case 91..<93:
            lastAction = "pre-migration store"
            try observer.store.write { db in
                // A store from before 0004 had no change log either (0005 starts it empty).
                for table in ["overlay_steps", "overlay_entities", "overlay_groups", "change_log"] {
                    try db.execute(rawSQL: "DELETE FROM \(table)")
                }
            }
            changeLogBase["observer"] = try observer.entities(in: group, view: .committed)
            unmaintained.insert("observer")
        case 93..<95:
            lastAction = "observer builds missing views (daemon start)"
            try observer.buildMissingTentativeViews()
            if try observer.tentativeCount(of: group) > 0,
                try observer.checkTentativeOverlay(of: group) == .notMaintained
            {
                throw ScheduleError("observer: buildMissingTentativeViews left the view unmaintained")
            }
        default:
            lastAction = "observer restarts"
            let clock = observerClock
            observer = try Replica(path: observerPath, device: observerDevice, clock: { clock.now() })
        }
    }

    /// Part of what `from` holds, shuffled, with duplicates, in a few batches.
    mutating func deliver(_ from: TestReplica, to: Replica, fraction: Double) throws {
        try from.deliverPart(of: group, to: to, fraction: fraction, using: &rng)
    }

    /// While the relay is the committed authority: signs envelopes for tentative receipts the
    /// observer holds, picked at random (so usually not in tentative order), and hands them to
    /// the observer and to one member.
    mutating func relayCommits(_ n: Int) throws {
        for _ in 0..<n {
            guard case .relay = try observer.state(of: group, view: .committed)?.authority else { return }
            let tentative = try observer.log(of: group, view: .tentative).filter { $0.status == .tentative }
            guard let pick = tentative.randomElement(using: &rng) else { return }
            let e = try Envelope.sign(
                group: group, seq: observer.committedSeq(of: group) + 1, receipt: pick.receipt.cid, term: 0,
                receivedAt: 1, key: relay.signingKey)
            _ = try observer.ingest(receipts: [], envelopes: [e])
            let member = writers.randomElement(using: &rng)!
            _ = try member.replica.ingest(receipts: Bool.random(using: &rng) ? [pick.receipt] : [], envelopes: [e])
        }
    }

    /// A second receipt for a counter bob already used, to one replica.
    mutating func equivocate() throws {
        guard let held = try bob.replica.vector(of: group).authors.first(where: { $0.0 == bob.device.device })?.1,
            held > 0
        else { return }
        let twin = try handmade(
            bob.device, group: group, counter: held, op: .entityPut(key: "twin", value: .int(Int64(step))),
            hlc: bob.clock.now())
        let target = [alice.replica, carol.replica, observer].randomElement(using: &rng)!
        _ = try target.ingest(receipts: try bob.holdings(group).receipts + [twin])
    }

    /// Stores a receipt straight through the store API, as a binary without the overlay would.
    mutating func olderBinaryWrite() throws {
        bobOldCounter += 1
        let r = try handmade(
            bobOld, group: group, counter: bobOldCounter, op: .entityPut(key: "old", value: .int(Int64(step))),
            hlc: observerClock.now())
        try observer.store.write { db in
            try db.insertCertificate(r.certificate)
            try db.insertReceipt(r, receivedAt: 1)
        }
        unmaintained.insert("observer")
    }

    mutating func checkAll() throws {
        for (name, replica) in replicas {
            guard try replica.groupIDs().contains(group) else { continue }
            let committed = try replica.stateHash(of: group, view: .committed)
            if committed != (try replica.replayedStateHash(of: group)) {
                throw ScheduleError("\(name): committed tables differ from a replay")
            }
            switch try replica.checkTentativeOverlay(of: group) {
            case .matches: unmaintained.remove(name)
            case .notMaintained where unmaintained.contains(name): break
            case .notMaintained: throw ScheduleError("\(name): tentative view not maintained")
            case .mismatch(let what): throw ScheduleError("\(name): tentative view differs from a fold: \(what)")
            }
            try checkChangeLog(name, replica)
        }
    }

    /// The change log is a chain per key (each row's old value is the previous row's new one)
    /// and, replayed, gives the tentative view of every maintained replica.
    func checkChangeLog(_ name: String, _ replica: Replica) throws {
        var shown = [String: [UInt8]?]()
        for e in changeLogBase[name] ?? [] { shown[e.key] = .some(CBOREncoder.encode(e.value)) }
        for row in try replica.changes(after: 0, group: group, limit: 1_000_000)
        where row.kind == ChangeLogKind.entity.rawValue {
            let key = row.key!
            if let previous = shown[key], previous != row.oldValue {
                throw ScheduleError("\(name): change log row \(row.id) for \(key) does not follow the previous one")
            }
            shown[key] = .some(row.newValue)
        }
        guard !unmaintained.contains(name) else { return }
        for entity in try replica.entities(in: group, view: .tentative) {
            guard let logged = shown[entity.key] else {
                throw ScheduleError("\(name): \(entity.key) is in the view but never in the change log")
            }
            if logged.map({ try? CBORDecoder.decodeStrict($0) }) != .some(entity.value) {
                throw ScheduleError("\(name): the change log ends at another value of \(entity.key)")
            }
        }
        for (key, value) in shown where value != nil {
            if try replica.entity(key, in: group, view: .tentative) == nil {
                throw ScheduleError("\(name): the change log shows \(key), the view does not")
            }
        }
    }
}

struct ScheduleError: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
