import Foundation
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

/// A committed group of `count` entity writes by 4 author devices of one owner, with a
/// receiving identity invited (so the owner's node offers the group to it).
struct CatchUpFixture {
    let owner: LocalDevice
    let receiver: LocalDevice
    let group: GroupID
    let receipts: [Receipt]
    let envelopes: [Envelope]

    init(count: Int) throws {
        let owner = try LocalDevice.generate(name: "sequencer", createdAt: 1)
        let receiver = try LocalDevice.generate(name: "receiver", createdAt: 1)
        self.owner = owner
        self.receiver = receiver
        let authors = try (0..<4).map { try owner.additionalDevice(name: "author-\($0)", createdAt: 1) }
        let group = GroupID.random()
        self.group = group
        func sign(
            _ device: LocalDevice, _ counter: UInt64, _ op: GroupOperation, _ parent: CID?, _ hlc: UInt64
        ) throws -> Receipt {
            try device.sign(op, in: group, counter: counter, after: parent, hlc: hlc)
        }
        var receipts = [try sign(owner, 1, .created(name: "bench", maxMembers: 12), nil, 1)]
        receipts.append(
            try sign(owner, 2, .memberAdded(identity: receiver.identity, role: .member), receipts[0].cid, 2))
        var last = [CID](repeating: receipts[1].cid, count: authors.count)
        for i in 0..<count {
            let a = i % authors.count
            let op = GroupOperation.entityPut(
                key: "k\(i % 1000)",
                value: .textMap(["n": .int(Int64(i)), "pad": .bytes([UInt8](repeating: 7, count: 48))]))
            let r = try sign(authors[a], UInt64(i / authors.count + 1), op, last[a], 10 + UInt64(i))
            last[a] = r.cid
            receipts.append(r)
        }
        self.receipts = receipts
        // As the solo sequencer commits a backlog: runs of up to 256 seqs under one signature (§3.5).
        envelopes = try EnvelopeRun.signRuns(
            group: group, firstSeq: 1, receipts: receipts.map(\.cid), term: 0, receivedAt: 1, key: owner.signingKey)
    }
}

extension CatchUpFixture {
    /// `dir/source` holds the owner's keys and, ingested, every receipt and envelope (returned
    /// with the ingest's seconds); `dir/target`, the receiver's keys. The source makes no
    /// snapshot (issue 18 makes one every 10,000 commits), so a receiver catches up through the
    /// log, not from a snapshot (§23.3, which FloorBench measures).
    func makeHomes(in dir: String) throws -> (source: Replica, ingestSeconds: Double, ingestCPU: Double) {
        for home in ["source", "target"] {
            try FileManager.default.createDirectory(atPath: dir + "/" + home, withIntermediateDirectories: true)
        }
        try owner.save(home: dir + "/source")
        try receiver.save(home: dir + "/target")
        var limits = ReplicaLimits()
        limits.snapshotInterval = 0
        let source = try Replica(path: dir + "/source/replica.sqlite", device: owner, limits: limits)
        let cpuBefore = cpuSeconds()
        let seconds = try timed { _ = try source.ingest(receipts: receipts, envelopes: envelopes) }
        return (source, seconds, cpuSeconds() - cpuBefore)
    }
}

/// Catch-up between two real `peerlog daemon` processes on loopback: the owner's daemon holds
/// `count` committed receipts, a fresh receiver's daemon dials it; timed from the receiver's
/// start until its store holds everything, compared with a local ingest of the same data.
func daemonCatchUpBench(count: Int) throws {
    _ = try BenchDaemon.binary
    let dir = NSTemporaryDirectory() + "peerlog-catchup-\(getpid())"
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let f = try CatchUpFixture(count: count)
    let (source, ingestSeconds, ingestCPU) = try f.makeHomes(in: dir)
    let expected = UInt64(f.receipts.count)

    let sourceDaemon = try BenchDaemon(home: dir + "/source", [])
    defer { sourceDaemon.stop() }

    let clock = ContinuousClock()
    let began = clock.now
    let targetDaemon = try BenchDaemon(
        home: dir + "/target", ["--peer", sourceDaemon.address, "--allow", f.owner.identity.string])
    defer { targetDaemon.stop() }
    // The receiver's memory while it ingests (the sender's too: it reads and sends everything).
    let receiverMemory = ProcessMemory(pid: targetDaemon.process.processIdentifier)
    let senderMemory = ProcessMemory(pid: sourceDaemon.process.processIdentifier)
    defer {
        receiverMemory.stop()
        senderMemory.stop()
    }
    let target = try Replica(path: dir + "/target/replica.sqlite", device: f.receiver)
    var held: UInt64 = 0
    var lastReport = clock.now
    while held < expected {
        Thread.sleep(forTimeInterval: 0.1)
        do { held = try target.committedSeq(of: f.group) } catch {
            print("  (receiver store not readable yet: \(error))")
        }
        if clock.now - lastReport > .seconds(5) {
            print(
                "  … \(held) of \(expected) committed on the receiver (its RSS \(mebibytes(receiverMemory.current)), peak \(mebibytes(receiverMemory.peak)))"
            )
            lastReport = clock.now
        }
        guard clock.now - began < .seconds(max(600, count / 1_000)) else {
            throw BenchError("catch-up stalled at \(held) of \(expected)")
        }
    }
    let catchUpSeconds = seconds(clock.now - began)
    let (senderCPU, receiverCPU) = (
        cpuSeconds(sourceDaemon.process.processIdentifier), cpuSeconds(targetDaemon.process.processIdentifier)
    )
    let receiverWrote = bytesWritten(targetDaemon.process.processIdentifier)
    let (receiverPeak, receiverAfter, senderPeak) = (receiverMemory.peak, receiverMemory.current, senderMemory.peak)
    let same = try target.stateHash(of: f.group, view: .committed) == source.stateHash(of: f.group, view: .committed)
    guard same else { throw BenchError("receiver's state hash differs after catch-up") }

    let localRate = Double(f.receipts.count) / ingestSeconds
    let catchUpRate = Double(f.receipts.count) / catchUpSeconds
    figure("local ingest \(format(Double(f.receipts.count))) receipts + envelopes", format(localRate) + " /s")
    figure("daemon → fresh daemon catch-up", format(catchUpRate) + " /s")
    figure("  wall time (incl. start and handshake)", String(format: "%.2f s", catchUpSeconds))
    ratio("daemon catch-up / local ingest", catchUpRate / localRate, target: 0.8)  // issue 37 (0.5 before it)
    figure("  CPU of the sender / the receiver", String(format: "%.2f / %.2f s", senderCPU, receiverCPU))
    figure("  CPU of the local ingest (this process)", String(format: "%.2f s", ingestCPU))
    figure("  bytes the receiver passed to write calls", String(format: "%.2f GB", Double(receiverWrote) / 1e9))
    figure("receiving daemon peak RSS (VmHWM)", mebibytes(receiverPeak) + " (target < 256 MiB)")
    figure("  its RSS once caught up", mebibytes(receiverAfter))
    figure("sending daemon peak RSS (VmHWM)", mebibytes(senderPeak))
}
