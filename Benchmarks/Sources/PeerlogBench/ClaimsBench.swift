import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

/// `devices` member daemons claim the same `names` names while offline (each claim an
/// `entity.write` "if absent: put", docs/PROTOCOL.md §9.7), then come back at once through a
/// real `peerlog relay`: the time until every member holds every claim committed, and the check
/// that each name was granted exactly once, the same on every member.
func claimsBench(devices count: Int, names: Int) throws {
    let dir = NSTemporaryDirectory() + "peerlog-claims-bench-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let relayDevice = try LocalDevice.generate(name: "claims-relay", createdAt: 1)
    try relayDevice.save(home: dir + "/relay")
    let homes = (0..<count).map { dir + "/m\($0)" }
    let devices = try (0..<count).map { try LocalDevice.generate(name: "m\($0)", createdAt: 1) }
    for (d, h) in zip(devices, homes) { try d.save(home: h) }
    let replicas = try zip(devices, homes).map { try Replica(path: $1 + "/replica.sqlite", device: $0) }
    let port = "127.0.0.1:\(freeLoopbackPort())"
    var processes = [BenchDaemon]()
    defer { for p in processes { p.stop() } }
    processes.append(
        try BenchDaemon(
            home: dir + "/relay", listen: port, command: ["relay", "run"], ["--allow", devices[0].identity.string]))
    let group = try replicas[0].createGroup(name: "names", maxMembers: count)
    for d in devices.dropFirst() {
        try replicas[0].append(.memberAdded(identity: d.identity, role: .member), to: group)
    }
    try replicas[0].append(.sequencerChanged(.relay(key: relayDevice.device, address: port)), to: group)
    let relayArgs = ["--peer", port, "--allow", relayDevice.identity.string]
    func startMembers() throws {
        processes.append(try BenchDaemon(home: homes[0], []))
        for h in homes.dropFirst() { processes.append(try BenchDaemon(home: h, relayArgs)) }
    }
    func stopMembers() {
        for p in processes.dropFirst() { p.stop() }
        processes.removeSubrange(1...)
    }
    func wait(_ what: String, timeout: Double = 300, _ done: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !done() {
            guard Date() < deadline else { throw BenchError("timed out waiting for \(what)") }
            Thread.sleep(forTimeInterval: 0.02)
        }
    }
    // Together once: everyone joins.
    try startMembers()
    try wait("the members to receive the group") { try replicas.allSatisfy { try $0.groupIDs().contains(group) } }
    let accepts = try replicas.dropFirst().map { try $0.append(.inviteAccepted, to: group).receipt.cid }
    try wait("every acceptance to commit everywhere") {
        try replicas.allSatisfy { r in try accepts.allSatisfy { try r.isCommitted($0) } }
    }
    stopMembers()

    // Apart: every member claims every name (one batch of conditional writes each).
    let base = try replicas[0].committedSeq(of: group)
    var claims = [[CID]]()
    let writing = try timed {
        for (i, r) in replicas.enumerated() {
            let ops = (0..<names).map { n in
                GroupOperation.entityWrite(
                    EntityWrite(
                        conditions: [.absent(key: "name/\(n)")],
                        changes: [.put(key: "name/\(n)", value: .int(Int64(i)))]))
            }
            claims.append(try r.appendBatch(ops, to: group).map(\.receipt.cid))
        }
    }
    figure("\(count) members x \(names) offline claims written", String(format: "%.2f s", writing))

    // Together again: timed until every member holds every claim committed.
    let total = UInt64(count * names)
    let clock = ContinuousClock()
    let start = clock.now
    try startMembers()
    try wait("\(total) claims committed on every member", timeout: 900) {
        try replicas.allSatisfy { try $0.committedSeq(of: group) >= base + total }
    }
    let settle = seconds(clock.now - start)
    figure("time to settle (daemons start to all committed)", String(format: "%.2f s", settle))
    figure("  commits/s through the relay", format(Double(total) / settle))

    // Every name granted exactly once, the same claim on every member.
    var granted = [Int](repeating: 0, count: names)
    for (i, mine) in claims.enumerated() {
        for (n, cid) in mine.enumerated() {
            switch try replicas[0].writeOutcome(of: cid) {
            case .committed?:
                granted[n] += 1
                let holder = try replicas[0].entity("name/\(n)", in: group, view: .committed)?.value
                guard holder == .int(Int64(i)) else {
                    throw BenchError("name/\(n) holds \(String(describing: holder))")
                }
            case .rejected(_, _, let reason)? where reason.hasPrefix("condition 1 failed"): break
            case let other: throw BenchError("claim \(cid): \(String(describing: other))")
            }
        }
    }
    guard granted.allSatisfy({ $0 == 1 }) else {
        throw BenchError("names granted other than once: \(granted.enumerated().filter { $0.element != 1 }.prefix(5))")
    }
    let hashes = try Set(replicas.map { try $0.stateHash(of: group, view: .committed) })
    guard hashes.count == 1 else { throw BenchError("members differ at the end") }
    figure("every name granted exactly once", "\(names) of \(names), \(count) members agree")
}
