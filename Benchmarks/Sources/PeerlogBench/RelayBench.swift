import Foundation
import PeerlogEngine
import PeerlogModel
import PeerlogNode

/// A real `peerlog relay` on loopback sequencing one group for two member daemons, each
/// written by its own writer thread (like the CLI, a separate replica handle): commits per
/// second until both members hold every write committed. With a PostgreSQL URL, two relay
/// processes share the database and each member talks to a different one, so every
/// assignment races the other process through `UNIQUE(group, seq)`.
func relayBench(count: Int, postgres: String?) throws {
    let dir = NSTemporaryDirectory() + "peerlog-relay-bench-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let relayDevice = try LocalDevice.generate(name: "bench-relay", createdAt: 1)
    let relayHomes = postgres == nil ? [dir + "/relay1"] : [dir + "/relay1", dir + "/relay2"]
    for h in relayHomes { try relayDevice.save(home: h) }
    let names = ["ann", "ben"]
    let homes = names.map { dir + "/" + $0 }
    let devices = try names.map { try LocalDevice.generate(name: $0, createdAt: 1) }
    for (d, h) in zip(devices, homes) { try d.save(home: h) }
    let replicas = try zip(devices, homes).map { try Replica(path: $1 + "/replica.sqlite", device: $0) }

    let ports = relayHomes.map { _ in "127.0.0.1:\(freeLoopbackPort())" }
    var processes = [BenchDaemon]()
    defer { for p in processes { p.stop() } }
    for (home, port) in zip(relayHomes, ports) {
        processes.append(
            try BenchDaemon(
                home: home, listen: port, command: ["relay", "run"],
                ["--allow", devices[0].identity.string] + (postgres.map { ["--postgres", $0] } ?? [])))
    }
    let group = try replicas[0].createGroup(name: "bench")
    try replicas[0].append(.memberAdded(identity: devices[1].identity, role: .member), to: group)
    try replicas[0].append(.sequencerChanged(.relay(key: relayDevice.device, address: ports[0])), to: group)
    // Ann reaches the relay at the address the group names; Ben at the last relay process.
    let key = relayDevice.device.string
    processes.append(try BenchDaemon(home: homes[0], []))
    processes.append(
        try BenchDaemon(
            home: homes[1],
            ["--peer", ports.last!, "--allow", relayDevice.identity.string, "--relay-via", "\(key)=\(ports.last!)"]))

    func wait(_ what: String, timeout: Double = 120, _ done: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while try !done() {
            guard Date() < deadline else { throw BenchError("timed out waiting for \(what)") }
            Thread.sleep(forTimeInterval: 0.01)
        }
    }
    try wait("Ben to receive the group") { try replicas[1].groupIDs().contains(group) }
    let accepted = try replicas[1].append(.inviteAccepted, to: group)
    try wait("Ben's acceptance to commit") { try replicas.allSatisfy { try $0.isCommitted(accepted.receipt.cid) } }

    let base = try replicas[0].committedSeq(of: group)
    let clock = ContinuousClock()
    let began = clock.now
    let per = count / 2
    let failures = LockedBox<[String]>([])
    let finished = LockedBox<[Double]>([])
    let writers = (0..<2).map { w in
        Thread {
            defer { finished.mutate { $0.append(seconds(clock.now - began)) } }
            do {
                for i in 0..<per {
                    try replicas[w].append(.entityPut(key: "w\(w)-\(i % 1000)", value: .int(Int64(i))), to: group)
                }
            } catch {
                failures.mutate { $0.append("\(error)") }
            }
        }
    }
    for t in writers { t.start() }
    // Threads finish on their own; poll until both members hold every write committed.
    try wait("\(2 * per) commits on both members", timeout: 900) {
        if let f = failures.value.first { throw BenchError("writer failed: \(f)") }
        return try replicas.allSatisfy { try $0.committedSeq(of: group) >= base + UInt64(2 * per) }
    }
    let total = seconds(clock.now - began)
    let label = postgres == nil ? "relay (SQLite), 1 process" : "relay (PostgreSQL), 2 processes"
    figure("\(label): \(2 * per) writes from 2 members", format(Double(2 * per) / total) + " commits/s")
    figure("  wall time", String(format: "%.2f s", total))
    let writing = finished.value.max() ?? total
    figure(
        "  writers done after",
        String(
            format: "%.2f s (%@ appends/s; commits trail the last write by %.2f s)", writing,
            format(Double(2 * per) / writing), total - writing))

    // One write at a time from Ann, timed until Ben holds it committed. With PostgreSQL, Ann's
    // relay process assigns it and Ben's learns of it from the table (the follower), so this
    // includes the follower's delay, and both daemons' 250 ms store polls for a writer's handle.
    var probes = 0
    if postgres != nil {
        var latencies = [Double]()
        for i in 0..<20 {
            let start = clock.now
            let r = try replicas[0].append(.entityPut(key: "probe", value: .int(Int64(i))), to: group)
            try wait("probe \(i)") { try replicas[1].isCommitted(r.receipt.cid) }
            latencies.append(seconds(clock.now - start))
        }
        probes = latencies.count
        latencies.sort()
        figure(
            "  one write, member of relay 1 -> member of relay 2",
            String(
                format: "median %.0f ms, max %.0f ms (%d writes)", latencies[latencies.count / 2] * 1000,
                latencies.last! * 1000, latencies.count))
    }

    // Backlog: the members go offline, each writes `per` receipts, both come back at once;
    // timed until both hold all of them committed (sync to the relay, assignment, envelopes back).
    for i in relayHomes.count..<processes.count { processes[i].stop() }
    processes.removeSubrange(relayHomes.count...)
    let before = try replicas[0].committedSeq(of: group)
    for w in 0..<2 {
        _ = try replicas[w].ingest(
            receipts: try signedChain(per, by: devices[w], in: group, after: replicas[w], keyPrefix: "b\(w)-"))
    }
    let restart = clock.now
    processes.append(try BenchDaemon(home: homes[0], []))
    processes.append(try BenchDaemon(home: homes[1], ["--relay-via", "\(key)=\(ports.last!)"]))
    try wait("\(2 * per) backlog commits on both members", timeout: 900) {
        try replicas.allSatisfy { try $0.committedSeq(of: group) >= before + UInt64(2 * per) }
    }
    let backlog = seconds(clock.now - restart)
    figure("\(label): backlog of \(2 * per) from 2 members", format(Double(2 * per) / backlog) + " commits/s")
    figure("  wall time (incl. daemon start)", String(format: "%.2f s", backlog))

    let hashes = try Set(replicas.map { try $0.stateHash(of: group, view: .committed) })
    guard hashes.count == 1 else { throw BenchError("members differ at the end") }
    let log = try replicas[0].log(of: group, view: .committed)
    guard log.count == Int(base) + 4 * per + probes, Set(log.map(\.receipt.cid)).count == log.count else {
        throw BenchError(
            "committed log has \(log.count) entries, expected \(Int(base) + 4 * per + probes), without repeats")
    }
}

/// A value behind a lock, for writer threads.
final class LockedBox<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.withLock { stored } }
    func mutate(_ body: (inout T) -> Void) { lock.withLock { body(&stored) } }
}
