import Foundation
import PeerlogEngine
import PeerlogModel
import PeerlogNode

/// Three real daemons on loopback with an elected sequencer: commits per second while one
/// follower writes `count` receipts, then `failovers` times: SIGKILL the leader, write on a
/// survivor, time until that write is committed there (a new leader was elected and a
/// majority stored it), restart the old leader and let it catch up.
func electedBench(count: Int, failovers: Int) throws {
    let dir = NSTemporaryDirectory() + "peerlog-elected-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let names = ["ann", "ben", "cat"]
    let homes = names.map { dir + "/" + $0 }
    let devices = try names.map { try LocalDevice.generate(name: $0, createdAt: 1) }
    for (d, h) in zip(devices, homes) {
        try FileManager.default.createDirectory(atPath: h, withIntermediateDirectories: true)
        try d.save(home: h)
    }
    let replicas = try zip(devices, homes).map { try Replica(path: $1 + "/replica.sqlite", device: $0) }
    let group = try replicas[0].createGroup(name: "bench")
    for d in devices.dropFirst() {
        try replicas[0].append(.memberAdded(identity: d.identity, role: .member), to: group)
    }

    // Fixed ports: a restarted daemon must come back where its peers dial it.
    var daemons = [BenchDaemon?](repeating: nil, count: 3)
    let first = try BenchDaemon(home: homes[0], [])
    let ports = [first.address] + (1...2).map { _ in "127.0.0.1:\(freeLoopbackPort())" }
    func start(_ i: Int) throws -> BenchDaemon {
        var extra = [String]()
        for j in 0..<3 where j != i { extra += ["--peer", ports[j], "--allow", devices[j].identity.string] }
        return try BenchDaemon(home: homes[i], listen: ports[i], extra)
    }
    first.stop()
    for i in 0..<3 { daemons[i] = try start(i) }
    defer { for d in daemons { d?.stop() } }

    func wait(_ what: String, timeout: Double = 120, _ done: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !done() {
            guard Date() < deadline else { throw BenchError("timed out waiting for \(what)") }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
    try wait("the invitees to receive the group") {
        try replicas[1...].allSatisfy { try $0.groupIDs().contains(group) }
    }
    for r in replicas.dropFirst() { try r.append(.inviteAccepted, to: group) }
    try wait("the acceptances to commit") { try replicas[0].committedSeq(of: group) == 5 }
    try replicas[0].append(.sequencerChanged(.elected(voters: devices.map(\.device).sorted())), to: group)
    let probe = try replicas[1].append(.entityPut(key: "probe", value: "1"), to: group)
    try wait("a leader") { try replicas.allSatisfy { try $0.isCommitted(probe.receipt.cid) } }

    // Live: one follower writes (a separate process from its daemon, like the CLI), everyone commits.
    let writer = replicas[1]
    let live = count / 4
    var base = try writer.committedSeq(of: group)
    let clock = ContinuousClock()
    var began = clock.now
    for i in 0..<live { try writer.append(.entityPut(key: "k\(i % 1000)", value: .int(Int64(i))), to: group) }
    let wrote = clock.now
    try wait("\(live) commits", timeout: 600) {
        try replicas.allSatisfy { try $0.committedSeq(of: group) >= base + UInt64(live) }
    }
    var total = seconds(clock.now - began)
    figure("elected, 3 voters: \(live) live writes on a follower", format(Double(live) / total) + " commits/s")
    figure("  writing took", String(format: "%.2f s", seconds(wrote - began)))

    // Live with a batched writer (the figure): the same count in `appendBatch` calls of
    // 50, as `put --batch` or a stream's reads write them, each followed by the word to the
    // daemon the CLI sends, so the ordering path is timed, not one transaction per write.
    base = try writer.committedSeq(of: group)
    began = clock.now
    for start in stride(from: 0, to: live, by: 50) {
        let ops = (start..<min(start + 50, live)).map {
            GroupOperation.entityPut(key: "l\($0 % 1000)", value: .int(Int64($0)))
        }
        _ = try writer.appendBatch(ops, to: group)
        ControlClient.tellWrote(socketPath: homes[1] + "/peerlog.sock")  // as the CLI does
    }
    let wroteBatched = clock.now
    try wait("\(live) batched commits", timeout: 600) {
        try replicas.allSatisfy { try $0.committedSeq(of: group) >= base + UInt64(live) }
    }
    total = seconds(clock.now - began)
    figure(
        "elected, 3 voters: \(live) live writes, batches of 50", format(Double(live) / total) + " commits/s")
    figure("  writing took", String(format: "%.2f s", seconds(wroteBatched - began)))

    // Backlog: all daemons down, a follower writes `count` receipts, the daemons start; timed
    // from the start until all are committed everywhere (election, sync to the leader,
    // assignment, majority, envelopes back).
    for i in 0..<3 {
        daemons[i]?.stop()
        daemons[i] = nil
    }
    base = try writer.committedSeq(of: group)
    _ = try writer.ingest(receipts: try signedChain(count, by: devices[1], in: group, after: writer, keyPrefix: "b"))
    began = clock.now
    for i in 0..<3 { daemons[i] = try start(i) }
    let started = seconds(clock.now - began)
    // Where the time goes: every 0.5 s, each replica's receipts held and commits.
    var nextMark = 0.5
    try wait("\(count) backlog commits", timeout: 600) {
        let at = seconds(clock.now - began)
        if at >= nextMark {
            nextMark += 0.5
            let held = try replicas.map { r in
                "\(try r.committedSeq(of: group) - base)/\(try r.tentativeCount(of: group))"
            }
            let roles = (0..<3).map { i in
                let s = try? ControlClient.status(socketPath: homes[i] + "/peerlog.sock")
                return s?.groups.first?.sequencer?.role?.rawValue ?? "-"
            }
            let cpu = daemons.map { d in
                d.map { String(format: "%.1f", cpuSeconds($0.process.processIdentifier)) } ?? "-"
            }
            print(
                String(format: "  %5.1f s  committed/tentative: ", at) + held.joined(separator: "  ") + "  "
                    + roles.joined(separator: " ") + "  CPU-s " + cpu.joined(separator: " "))
        }
        return try replicas.allSatisfy { try $0.committedSeq(of: group) >= base + UInt64(count) }
    }
    total = seconds(clock.now - began)
    figure("  daemons started after", String(format: "%.2f s", started))
    figure("elected, 3 voters: backlog of \(count) → committed", format(Double(count) / total) + " commits/s")
    figure("  wall time (incl. start and election)", String(format: "%.2f s", total))

    // Failover.
    var times = [Double]()
    for round in 0..<failovers {
        var leader: Int?
        try wait("a leader to be known") {
            leader = (0..<3).first { i in
                guard let s = try? ControlClient.status(socketPath: homes[i] + "/peerlog.sock") else { return false }
                return s.groups.first?.sequencer?.role?.rawValue == "leader"
            }
            return leader != nil
        }
        let l = leader!
        let survivor = (l + 1) % 3
        daemons[l]!.kill9()
        daemons[l] = nil
        let t0 = clock.now
        let w = try replicas[survivor].append(.entityPut(key: "failover", value: .int(Int64(round))), to: group)
        try wait("a commit after the leader died") { try replicas[survivor].isCommitted(w.receipt.cid) }
        times.append(seconds(clock.now - t0))
        daemons[l] = try start(l)
        try wait("the old leader to catch up") {
            try replicas[l].committedSeq(of: group) == replicas[survivor].committedSeq(of: group)
        }
    }
    if !times.isEmpty {
        let sorted = times.sorted()
        figure(
            "failover: leader SIGKILLed → next commit (\(times.count)×)",
            String(format: "median %.2f s", sorted[sorted.count / 2]))
        figure("  min / max", String(format: "%.2f / %.2f s", sorted.first!, sorted.last!))
        ratio("median failover / 2 s target", sorted[sorted.count / 2] / 2.0)
    }
    let hashes = try Set(replicas.map { try $0.stateHash(of: group, view: .committed) })
    guard hashes.count == 1 else { throw BenchError("replicas differ at the end") }
}

/// `count` entity.put receipts by `device`, each the child of the one before, following what
/// `replica` holds of the group. Signed as one chain and ingested at once: `append` checks
/// rules against the tentative view, which a backlog makes slow to build receipt by receipt.
func signedChain(
    _ count: Int, by device: LocalDevice, in group: GroupID, after replica: Replica, keyPrefix: String
) throws -> [Receipt] {
    let log = try replica.log(of: group, view: .tentative).map(\.receipt)
    var counter = log.filter { $0.author == device.device }.map(\.counter).max() ?? 0
    var parent = log.last!.cid
    var physical = max(log.map(\.hlc.physical).max()!, WallClock.nowMillis()) + 1
    var chain = [Receipt]()
    for i in 0..<count {
        counter += 1
        physical += 1
        let r = try device.sign(
            Receipt.Draft(
                group: group, type: "entity.put", counter: counter, parents: [parent],
                hlc: HLCTimestamp(physical: physical, logical: 0),
                body: GroupOperation.entityPut(key: "\(keyPrefix)\(i % 1000)", value: .int(Int64(i))).body))
        chain.append(r)
        parent = r.cid
    }
    return chain
}

/// A port nothing listens on right now (bound once, then released).
func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0
        }
    }
    return Int(UInt16(bigEndian: addr.sin_port))
}
