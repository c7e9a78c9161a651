import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogNode

/// `groups` groups sequenced by one relay, each shared by two of `devices` devices (an owner
/// and a member): created, the member added, the relay named (seqs 1–3, the owner's envelopes),
/// the invitation accepted (seq 4, the relay's envelope). Every device is in
/// `2 × groups / devices` groups.
struct RelayScaleFixture {
    let relay: LocalDevice
    let devices: [LocalDevice]
    /// Per group: its id, owner and member (indexes into `devices`).
    let groups: [(id: GroupID, owner: Int, member: Int)]
    /// What each device holds (its groups' receipts and envelopes), and what the relay holds.
    let held: [(receipts: [Receipt], envelopes: [Envelope])]
    let relayHolds: (receipts: [Receipt], envelopes: [Envelope])

    init(groups count: Int, devices deviceCount: Int, relayAddress: String) throws {
        relay = try LocalDevice.generate(name: "relay", createdAt: 1)
        devices = try (0..<deviceCount).map { try LocalDevice.generate(name: "d\($0)", createdAt: 1) }
        var groups = [(id: GroupID, owner: Int, member: Int)]()
        var held = [(receipts: [Receipt], envelopes: [Envelope])](repeating: ([], []), count: deviceCount)
        var all = (receipts: [Receipt](), envelopes: [Envelope]())
        for g in 0..<count {
            let owner = g % deviceCount
            // Members spread so that every pair of devices shares few groups.
            var member = (owner + 1 + g / deviceCount) % deviceCount
            if member == owner { member = (member + 1) % deviceCount }
            let group = GroupID.random()
            let (o, m) = (devices[owner], devices[member])
            let created = try o.sign(.created(name: "g\(g)", maxMembers: 4), in: group, counter: 1, after: nil, hlc: 2)
            let added = try o.sign(
                .memberAdded(identity: m.identity, role: .member), in: group, counter: 2, after: created.cid, hlc: 3)
            let named = try o.sign(
                .sequencerChanged(.relay(key: relay.device, address: relayAddress)), in: group, counter: 3,
                after: added.cid, hlc: 4)
            let accepted = try m.sign(.inviteAccepted, in: group, counter: 1, after: named.cid, hlc: 5)
            let receipts = [created, added, named, accepted]
            let envelopes =
                try EnvelopeRun.signRuns(
                    group: group, firstSeq: 1, receipts: receipts.prefix(3).map(\.cid), term: 0, receivedAt: 1,
                    key: o.signingKey)
                + EnvelopeRun.signRuns(
                    group: group, firstSeq: 4, receipts: [accepted.cid], term: 0, receivedAt: 1, key: relay.signingKey)
            for i in [owner, member] {
                held[i].receipts += receipts
                held[i].envelopes += envelopes
            }
            all.receipts += receipts
            all.envelopes += envelopes
            groups.append((group, owner, member))
        }
        self.groups = groups
        self.held = held
        relayHolds = all
    }
}

/// A relay holding `groups` groups for `devices` connected daemons (issue 37, item 5): the time
/// from starting the daemons until each has a TCP connection to the relay, the relay's idle CPU
/// and RSS after that, two statuses of the relay, and writes on an owner until the group's other
/// member holds them (through the relay, which sequences them; the first also shows whether
/// the sessions were up). Every process is real: one `relay run`,
/// `devices` daemons, each dialing the relay at the address its groups name.
func relayScaleBench(groups: Int, devices: Int, samples: Int = 20) throws {
    _ = try BenchDaemon.binary
    let dir = NSTemporaryDirectory() + "peerlog-relayscale-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let port = "127.0.0.1:\(freeLoopbackPort())"
    let clock = ContinuousClock()
    let buildStart = clock.now
    let f = try RelayScaleFixture(groups: groups, devices: devices, relayAddress: port)
    try f.relay.save(home: dir + "/relay")
    _ = try Replica(path: dir + "/relay/replica.sqlite", device: f.relay).ingest(
        receipts: f.relayHolds.receipts, envelopes: f.relayHolds.envelopes)
    for (i, d) in f.devices.enumerated() {
        try d.save(home: dir + "/d\(i)")
        _ = try Replica(path: dir + "/d\(i)/replica.sqlite", device: d).ingest(
            receipts: f.held[i].receipts, envelopes: f.held[i].envelopes)
    }
    print(
        "relay with \(format(Double(groups))) groups, \(devices) daemons (\(2 * groups / devices) groups each; "
            + "stores written in \(String(format: "%.1f", seconds(clock.now - buildStart))) s)")
    fflush(nil)

    let relay = try BenchDaemon(home: dir + "/relay", listen: port, command: ["relay", "run"], [])
    defer { relay.stop() }
    var daemons = [BenchDaemon]()
    defer { for d in daemons { d.stop() } }
    let began = clock.now
    for i in 0..<devices { daemons.append(try BenchDaemon(home: dir + "/d\(i)", [])) }
    let started = seconds(clock.now - began)
    let socket = dir + "/relay/peerlog.sock"
    // Counted from the kernel's table, not by asking the relay: a status of every group is
    // the relay's own work, timed once below.
    let relayPort = Int(port.split(separator: ":").last!)!
    var seen = 0
    while seen < devices {
        guard clock.now - began < .seconds(600) else {
            throw BenchError("only \(seen) of \(devices) daemons connected to the relay within 600 s")
        }
        Thread.sleep(forTimeInterval: 0.25)
        seen = establishedConnections(toLocalPort: relayPort)
    }
    let allConnected = seconds(clock.now - began)
    let connectCPU = cpuSeconds(relay.process.processIdentifier)

    print("  (all connected; idle for 12 s)")
    fflush(nil)
    Thread.sleep(forTimeInterval: 2)
    let pids = [relay.process.processIdentifier] + daemons.map(\.process.processIdentifier)
    let before = pids.map(cpuSeconds)
    let idleStart = clock.now
    Thread.sleep(forTimeInterval: 10)
    let idleSeconds = seconds(clock.now - idleStart)
    let idle = zip(pids, before).map { (cpuSeconds($0) - $1) / idleSeconds * 100 }
    let relayRSS = ProcessMemory.status(relay.process.processIdentifier)["VmRSS"] ?? 0
    let daemonRSS = daemons.map { ProcessMemory.status($0.process.processIdentifier)["VmRSS"] ?? 0 }
    // Two statuses: the second reuses the folds of every group the first read (no group
    // operation between). A status not built within the hub's patience (200 ms) is the newest
    // built before; `builtAt` tells whether it was built for this request.
    var statuses = [(ms: Double, sessions: Int, fresh: Bool)]()
    for _ in 0..<2 {
        let (asked, start) = (WallClock.nowMillis(), clock.now)
        let status = try ControlClient.status(socketPath: socket)
        statuses.append((seconds(clock.now - start) * 1000, status.peers.count, (status.builtAt ?? 0) >= asked))
    }

    // One write on an owner (its store written here, its daemon told as the CLI tells it) until
    // the member holds it committed: owner → relay (which sequences) → member.
    var latencies = [Double]()
    for i in 0..<samples {
        let g = f.groups[(i * 7_919) % f.groups.count]
        let owner = try Replica(path: dir + "/d\(g.owner)/replica.sqlite", device: f.devices[g.owner])
        let member = try Replica(path: dir + "/d\(g.member)/replica.sqlite", device: f.devices[g.member])
        let start = clock.now
        _ = try owner.append(.entityPut(key: "live-\(i)", value: .int(Int64(i))), to: g.id)
        ControlClient.tellWrote(socketPath: dir + "/d\(g.owner)/peerlog.sock")
        while try member.entity("live-\(i)", in: g.id, view: .committed) == nil {
            guard clock.now - start < .seconds(300) else {
                throw BenchError("write \(i) never reached the member through the relay")
            }
            Thread.sleep(forTimeInterval: 0.001)
        }
        latencies.append(seconds(clock.now - start) * 1000)
        Thread.sleep(forTimeInterval: 0.05)
    }
    let first = latencies[0]
    latencies.sort()
    func pct(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(p * Double(latencies.count)))] }
    let sortedRSS = daemonRSS.sorted()

    figure("  daemons started (each until it listens)", String(format: "%.1f s", started))
    figure("  start until \(devices) TCP connections at the relay", String(format: "%.1f s", allConnected))
    figure("  relay CPU by then", String(format: "%.1f s", connectCPU))
    figure("  relay idle CPU, 10 s", String(format: "%.2f%%", idle[0]))
    figure("  relay RSS", mebibytes(relayRSS))
    for (i, s) in statuses.enumerated() {
        figure(
            "  status of the relay, \(i == 0 ? "first" : "second"): time; sessions shown",
            String(format: "%.0f ms; %d", s.ms, s.sessions) + (s.fresh ? " (built for it)" : " (an older build)"))
    }
    figure(
        "  daemons' idle CPU: median, max, sum",
        String(
            format: "%.2f%%, %.2f%%, %.0f%%", idle.dropFirst().sorted()[devices / 2], idle.dropFirst().max() ?? 0,
            idle.dropFirst().reduce(0, +)))
    figure("  daemon RSS: median, max", "\(mebibytes(sortedRSS[devices / 2])), \(mebibytes(sortedRSS.last ?? 0))")
    figure("  the first write, owner until the member holds it", String(format: "%.1f ms", first))
    figure(
        "  one write, owner until the member holds it",
        String(format: "p50 %.1f, p90 %.1f, max %.1f ms", pct(0.5), pct(0.9), latencies.last!))
}

/// TCP connections in state ESTABLISHED whose local port is `port` (the accepted side of a
/// listener's connections), from /proc/net/tcp.
func establishedConnections(toLocalPort port: Int) -> Int {
    // Read in a loop: procfs reports size 0, which Foundation's whole-file read takes at its word.
    guard let file = fopen("/proc/net/tcp", "r") else { return 0 }
    defer { fclose(file) }
    var bytes = [UInt8]()
    var chunk = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = fread(&chunk, 1, chunk.count, file)
        if n <= 0 { break }
        bytes += chunk[0..<n]
    }
    let text = String(decoding: bytes, as: UTF8.self)
    let suffix = String(format: ":%04X", port)
    return text.split(separator: "\n").dropFirst().filter { line in
        let fields = line.split(separator: " ")
        return fields.count > 3 && fields[1].hasSuffix(suffix) && fields[3] == "01"
    }.count
}
