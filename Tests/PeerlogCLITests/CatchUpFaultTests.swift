import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Synchronization
import Testing

/// A long committed log held by Ann's home, with Bob's identity invited first or last. Signed
/// in-process (as the catch-up benchmark does), so the tests spend their time syncing. Each
/// kind of log is built once per test process and copied into each test's directory: signing
/// and storing 10,000 receipts costs a debug build seconds of CPU, five times over in this file.
struct LongLog {
    let ann: LocalDevice
    let bob: LocalDevice
    let annHome: String
    let bobHome: String
    let group: GroupID
    let total: Int

    /// A log built once, in a directory of its own that no daemon ever opens.
    private struct Built {
        let ann: LocalDevice
        let bob: LocalDevice
        let dir: String
        let group: GroupID
        let total: Int
    }
    private static let built = Mutex<[String: Built]>([:])

    init(dir: String, writes: Int, invitationLast: Bool, snapshots: Bool = false) throws {
        let key = "\(writes) \(invitationLast) \(snapshots)"
        let log = try Self.built.withLock { built in
            if let log = built[key] { return log }
            let log = try Self.build(writes: writes, invitationLast: invitationLast, snapshots: snapshots)
            built[key] = log
            return log
        }
        ann = log.ann
        bob = log.bob
        annHome = dir + "/ann"
        bobHome = dir + "/bob"
        group = log.group
        total = log.total
        try FileManager.default.copyItem(atPath: log.dir + "/ann", toPath: annHome)
        try FileManager.default.copyItem(atPath: log.dir + "/bob", toPath: bobHome)
    }

    private static func build(writes: Int, invitationLast: Bool, snapshots: Bool) throws -> Built {
        let dir = try TestSupport.temporaryDirectory()
        let ann = try LocalDevice.generate(name: "ann", createdAt: 1)
        let bob = try LocalDevice.generate(name: "bob", createdAt: 1)
        let annHome = dir + "/ann"
        let bobHome = dir + "/bob"
        for home in [annHome, bobHome] {
            try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
        }
        try ann.save(home: annHome)
        try bob.save(home: bobHome)
        let g = GroupID.random()
        var hlc: UInt64 = 1
        func sign(_ counter: UInt64, _ op: GroupOperation, _ parent: CID?) throws -> Receipt {
            hlc += 1
            return try ann.sign(
                Receipt.Draft(
                    group: g, type: op.receiptType, counter: counter, parents: parent.map { [$0] } ?? [],
                    hlc: HLCTimestamp(physical: hlc, logical: 0), body: op.body))
        }
        var receipts = [try sign(1, .created(name: "long", maxMembers: 12), nil)]
        let invite = GroupOperation.memberAdded(identity: bob.identity, role: .member)
        if !invitationLast { receipts.append(try sign(2, invite, receipts.last!.cid)) }
        for i in 0..<writes {
            let op = GroupOperation.entityPut(
                key: "k\(i % 500)",
                value: .textMap(["n": .int(Int64(i)), "pad": .bytes([UInt8](repeating: 7, count: 48))]))
            receipts.append(try sign(UInt64(receipts.count + 1), op, receipts.last!.cid))
        }
        if invitationLast { receipts.append(try sign(UInt64(receipts.count + 1), invite, receipts.last!.cid)) }
        let envelopes = try receipts.enumerated().map {
            try Envelope.sign(
                group: g, seq: UInt64($0.offset + 1), receipt: $0.element.cid, term: 0, receivedAt: 1,
                key: ann.signingKey)
        }
        // No snapshot of Ann's: these tests interrupt a catch-up of the log, which a snapshot
        // (made when the commits cross 10,000, §23.1) would replace. `snapshots` makes them.
        var limits = ReplicaLimits()
        if !snapshots { limits.snapshotInterval = 0 }
        // Closed (the replica released) before any test copies the files.
        try {
            let replica = try Replica(path: annHome + "/replica.sqlite", device: ann, limits: limits)
            _ = try replica.ingest(receipts: receipts, envelopes: envelopes)
        }()
        return Built(ann: ann, bob: bob, dir: dir, group: g, total: receipts.count)
    }

    /// Bob's committed mark, read from his store (nil while it has no such group).
    func bobCommitted(home: String? = nil) -> Int? {
        guard let r = try? TestSupport.peerlog(["group", "list", "--home", home ?? bobHome, "--json"]), r.status == 0,
            case .array(let rows)? = try? JSON.parse(r.stdout)
        else { return nil }
        for row in rows where row["id"] == .string(group.string) {
            if case .number(let n)? = row["committed_seq"] { return Int(n) }
        }
        return nil
    }

    /// Whether Bob sees his invitation (`peerlog invites`).
    func bobSeesInvitation(home: String? = nil) -> Bool {
        (try? TestSupport.peerlog(["invites", "--home", home ?? bobHome]).stdout.contains(group.string)) ?? false
    }

    /// Bob's home copied onto a fresh tmpfs of `size` mounted at `mountPoint` (root only; the
    /// caller unmounts it): the copy's path, or nil when the mount failed.
    func bobHomeOnTmpfs(at mountPoint: String, size: String) throws -> String? {
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        guard try TestSupport.run("/bin/mount", ["-t", "tmpfs", "-o", "size=\(size)", "tmpfs", mountPoint]).status == 0
        else { return nil }
        let copy = mountPoint + "/bob"
        _ = try TestSupport.run("/bin/cp", ["-a", bobHome, copy])
        return copy
    }

    /// Waits until Bob holds the whole log and sees his invitation.
    func bobCompletes(home: String? = nil, timeout: TimeInterval = 90) -> Bool {
        TestSupport.waitUntil(timeout: timeout) { bobCommitted(home: home) == total && bobSeesInvitation(home: home) }
    }
}

/// Issue 22, bugs 0 and 1: an invitee's catch-up survives every interruption (a tie-break, a
/// restarted peer, a killed daemon, a full disk), wherever its invitation sits in the log.
@Suite(.serialized)
struct CatchUpFaultTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    @Test func twoDaemonsDialingEachOtherFinishALongCatchUp() throws {
        let log = try LongLog(dir: dir, writes: 10_000, invitationLast: true)
        let annPort = try TestSupport.freePort()
        let bobPort = try TestSupport.freePort()
        // Both name the other: the two connections meet and the tie-break closes one.
        let ann = try DaemonProcess(
            home: log.annHome, listenPort: annPort, arguments: ["--peer", "127.0.0.1:\(bobPort)"])
        let bob = try DaemonProcess(
            home: log.bobHome, listenPort: bobPort,
            arguments: ["--peer", "127.0.0.1:\(annPort)", "--allow", log.ann.identity.string])
        defer {
            ann.stop()
            bob.stop()
        }
        #expect(
            log.bobCompletes(), "bob stalled at \(log.bobCommitted() ?? 0) of \(log.total)\n\(bob.stderr.suffix(3_000))"
        )
    }

    /// Ann's daemon restarts twice during Bob's catch-up: each time his connection drops and
    /// his dialer makes a new one.
    @Test func aPeerRestartedTwiceMidCatchUp() throws {
        let log = try LongLog(dir: dir, writes: 10_000, invitationLast: true)
        let annPort = try TestSupport.freePort()
        var ann = try DaemonProcess(home: log.annHome, listenPort: annPort)
        let bob = try DaemonProcess(
            home: log.bobHome, arguments: ["--peer", "127.0.0.1:\(annPort)", "--allow", log.ann.identity.string])
        defer {
            ann.stop()
            bob.stop()
        }
        for point in [512, 3_000] {
            #expect(TestSupport.waitUntil(timeout: 60) { (log.bobCommitted() ?? 0) >= point }, "bob reached \(point)")
            ann.stop()
            let at = log.bobCommitted() ?? 0
            #expect(at < log.total, "the restart came mid-catch-up (\(at) of \(log.total))")
            ann = try DaemonProcess(home: log.annHome, listenPort: annPort)
        }
        #expect(
            log.bobCompletes(), "bob stalled at \(log.bobCommitted() ?? 0) of \(log.total)\n\(bob.stderr.suffix(3_000))"
        )
    }

    /// Bob's daemon is frozen then killed (a crash or power cut) after a first chunk and again
    /// half way; every restart resumes.
    @Test(arguments: [true, false])
    func anInviteeKilledMidCatchUpResumes(invitationLast: Bool) throws {
        let log = try LongLog(dir: dir, writes: 10_000, invitationLast: invitationLast)
        let ann = try DaemonProcess(home: log.annHome)
        defer { ann.stop() }
        let bobArgs = ["--peer", ann.address, "--allow", log.ann.identity.string]
        for point in [1, log.total / 2] {
            let bob = try DaemonProcess(home: log.bobHome, arguments: bobArgs)
            #expect(TestSupport.waitUntil(timeout: 60) { (log.bobCommitted() ?? 0) >= point }, "bob reached \(point)")
            kill(bob.pid, SIGSTOP)
            let at = log.bobCommitted() ?? 0
            bob.kill9()
            #expect(at < log.total, "the kill came mid-catch-up (\(at) of \(log.total))")
        }
        let bob = try DaemonProcess(home: log.bobHome, arguments: bobArgs)
        defer { bob.stop() }
        #expect(
            log.bobCompletes(), "bob stalled at \(log.bobCommitted() ?? 0) of \(log.total)\n\(bob.stderr.suffix(3_000))"
        )
        #expect(try TestSupport.peerlog(["check", "--home", log.bobHome]).status == 0)
    }

    /// Bob's home is on a small tmpfs that fills during the catch-up; once it grows, the
    /// catch-up finishes without a restart. Needs root (mount).
    @Test(.enabled(if: getuid() == 0, "mounts a tmpfs (root only)"))
    func anInviteeWhoseDiskFilledResumesOnceThereIsRoom() throws {
        let log = try LongLog(dir: dir, writes: 10_000, invitationLast: true)
        let mountPoint = dir + "/small"
        // Room for the store's tables and a few of Ann's 512-receipt batches (each about 0.5 MB
        // in the write-ahead log, which is not checkpointed below 4 MB), not for the whole log
        // (over 15 MB). 1600k held the tables and one batch only just: on a busy machine the
        // first batch's commit did not fit, and nothing was committed before the disk filled.
        guard let bobHome = try log.bobHomeOnTmpfs(at: mountPoint, size: "4m") else {
            Issue.record("cannot mount a tmpfs")
            return
        }
        defer { _ = try? TestSupport.run("/bin/umount", ["-l", mountPoint]) }
        let ann = try DaemonProcess(home: log.annHome)
        let bob = try DaemonProcess(
            home: bobHome, arguments: ["--peer", ann.address, "--allow", log.ann.identity.string])
        defer {
            ann.stop()
            bob.stop()
        }
        #expect(
            TestSupport.waitUntil(timeout: 60) { bob.stderr.lowercased().contains("full") },
            "the disk filled: \(bob.stderr.suffix(2_000))")
        let at = log.bobCommitted(home: bobHome) ?? 0
        #expect(at > 0 && at < log.total, "the disk filled mid-catch-up (\(at) of \(log.total))")
        #expect(try TestSupport.run("/bin/mount", ["-o", "remount,size=64m", mountPoint]).status == 0)
        #expect(
            log.bobCompletes(home: bobHome),
            "bob stalled at \(log.bobCommitted(home: bobHome) ?? 0) of \(log.total)\n\(bob.stderr.suffix(3_000))")
    }
}

/// Issue 32, item 4: retention on a nearly full disk. Bob holds a long log on a small tmpfs and
/// turns retention on; the disk has room for commits but not for a compaction's write-ahead
/// log. Commits go on, the skipped compaction is logged and shown by `status`, the WAL does not
/// eat the disk, and once there is room `group compact` prunes. Needs root (mount).
@Suite(.serialized)
struct RetentionFullDiskTests {
    let dir: String
    init() throws { dir = try TestSupport.temporaryDirectory() }

    func freeBytes(_ path: String) -> Int {
        var s = statvfs()
        return statvfs(path, &s) == 0 ? Int(s.f_bavail) * Int(s.f_frsize) : -1
    }

    @Test(.enabled(if: getuid() == 0, "mounts a tmpfs (root only)"))
    func aCompactionThatCannotBeWrittenNeverStopsCommits() throws {
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let log = try LongLog(dir: dir, writes: 20_000, invitationLast: false)
        let mountPoint = dir + "/small"
        guard let bobHome = try log.bobHomeOnTmpfs(at: mountPoint, size: "64m") else {
            Issue.record("cannot mount a tmpfs")
            return
        }
        defer { _ = try? TestSupport.run("/bin/umount", ["-l", mountPoint]) }
        let g = log.group.string

        // Bob takes the whole log with the room he needs, and accepts.
        do {
            let ann = try DaemonProcess(home: log.annHome)
            let bob = try DaemonProcess(
                home: bobHome, arguments: ["--peer", ann.address, "--allow", log.ann.identity.string])
            defer {
                ann.stop()
                bob.stop()
            }
            #expect(log.bobCompletes(home: bobHome), "\(bob.stderr.suffix(2_000))")
            try expectPeerlog(["group", "accept", "--home", bobHome, g])
            #expect(
                TestSupport.waitUntil(timeout: 60) { log.bobCommitted(home: bobHome) == log.total + 1 },
                "bob's acceptance was not committed: \(bob.stderr.suffix(2_000))")
        }
        try expectPeerlog(["group", "retention", "--home", bobHome, g, "--on", "--min-age", "0"])
        try expectPeerlog(["group", "snapshot", "--home", bobHome, g, "--every", "100"])
        // Ann writes 600 more while Bob is away.
        let batch = dir + "/more.jsonl"
        try (0..<600).map { "{\"key\": \"more\($0 % 50)\", \"value\": \($0)}" }.joined(separator: "\n")
            .write(toFile: batch, atomically: true, encoding: .utf8)
        try expectPeerlog(["put", "--home", log.annHome, g, "--batch", batch])

        // Fill Bob's disk to 6 MB free: room for 600 commits, not for pruning 20,000 receipts.
        let filler = mountPoint + "/filler"
        let fill = max(0, freeBytes(mountPoint) - 6_000_000)
        #expect(try TestSupport.run("/usr/bin/fallocate", ["-l", String(fill), filler]).status == 0)
        let ann = try DaemonProcess(home: log.annHome)
        let bob = try DaemonProcess(home: bobHome, arguments: ["--peer", ann.address])
        defer {
            ann.stop()
            bob.stop()
        }
        let total = log.total + 601
        #expect(
            TestSupport.waitUntil(timeout: 90) { log.bobCommitted(home: bobHome) == total },
            "bob stopped at \(log.bobCommitted(home: bobHome) ?? 0) of \(total)\n\(bob.stderr.suffix(3_000))")
        #expect(bob.stderr.contains("snapshot/compaction skipped"), "\(bob.stderr.suffix(3_000))")
        #expect(bob.stderr.contains("not enough space: compacting group"), "\(bob.stderr.suffix(3_000))")
        let status = try expectPeerlog(["status", "--home", bobHome, "--json"])
        #expect(status.contains("maintenanceSkipped"), "\(status)")
        // The WAL gave its space back when the compaction was skipped (it held 5.4 MB of the 6
        // before; about 4.9 MB stay free now).
        #expect(
            freeBytes(mountPoint) > 2_000_000,
            "\(freeBytes(mountPoint)) bytes free: \((try? TestSupport.run("/bin/ls", ["-l", bobHome]).stdout) ?? "")")
        // A compaction by hand says what it needs, and writes nothing…
        let refused = try TestSupport.peerlog(["group", "compact", "--home", bobHome, g])
        #expect(refused.status != 0 && refused.stderr.contains("needs about"), "\(refused.stderr)")
        // …and once there is room, it prunes.
        try FileManager.default.removeItem(atPath: filler)
        #expect(try TestSupport.run("/bin/mount", ["-o", "remount,size=256m", mountPoint]).status == 0)
        let compacted = try peerlogJSON(["group", "compact", "--home", bobHome, g])
        guard case .number(let floorText)? = compacted["floor"], let floor = Int(floorText) else {
            Issue.record("group compact printed \(compacted)")
            return
        }
        #expect(floor > 20_000)
        #expect(try TestSupport.peerlog(["check", "--home", bobHome]).status == 0)
    }
}
