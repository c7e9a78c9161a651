import Dispatch
import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import Synchronization

/// Ingest, append latency, and opening a large store (issue 3's figures).
func replicaBench(rawVerify: Double, millionStore: String?) throws {
    let dir = NSTemporaryDirectory() + "peerlog-bench-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }

    // 100,000 receipts from 10 author devices (of the owner's identity), with their envelopes.
    let owner = try LocalDevice.generate(name: "sequencer", createdAt: 1)
    let authors = try (0..<10).map { try owner.additionalDevice(name: "author-\($0)", createdAt: 1) }
    let group = GroupID.random()
    let perAuthor = 10_000
    let created = try owner.sign(
        Receipt.Draft(
            group: group, type: "group.created", counter: 1, hlc: HLCTimestamp(physical: 1, logical: 0),
            body: GroupOperation.created(name: "bench", maxMembers: 12).body))
    let signed = Mutex([[Receipt]](repeating: [], count: authors.count))
    let generation = timed {
        DispatchQueue.concurrentPerform(iterations: authors.count) { a in
            var chain = [Receipt]()
            chain.reserveCapacity(perAuthor)
            for i in 0..<perAuthor {
                let op = GroupOperation.entityPut(
                    key: "a\(a)-k\(i % 1000)",
                    value: .textMap(["n": .int(Int64(i)), "pad": .bytes([UInt8](repeating: 7, count: 48))]))
                let draft = Receipt.Draft(
                    group: group, type: op.receiptType, counter: UInt64(i + 1),
                    parents: chain.last.map { [$0.cid] } ?? [created.cid],
                    hlc: HLCTimestamp(physical: 1_000 + UInt64(i), logical: UInt16(a)), body: op.body)
                chain.append(try! authors[a].sign(draft))
            }
            signed.withLock { $0[a] = chain }
        }
    }
    let chains = signed.withLock { $0 }
    var receipts = [created]
    for i in 0..<perAuthor { for a in 0..<authors.count { receipts.append(chains[a][i]) } }
    let envelopes = try signInParallel(
        receipts.enumerated().map { (UInt64($0.offset + 1), $0.element.cid) }, group: group, key: owner.signingKey)
    // What a solo sequencer emits for a backlog: runs of 256 seqs under one signature (§3.5).
    let runs = try EnvelopeRun.signRuns(
        group: group, firstSeq: 1, receipts: receipts.map(\.cid), term: 0, receivedAt: 1, key: owner.signingKey)
    figure("generated receipts + envelopes", String(format: "%.1f s", generation))

    let tentativeReplica = try Replica(
        path: dir + "/tentative.sqlite", device: LocalDevice.generate(name: "t", createdAt: 1))
    let tentativeTime = try timed { _ = try tentativeReplica.ingest(receipts: receipts) }
    let tentativeCount = try tentativeReplica.tentativeCount(of: group)
    precondition(tentativeCount == receipts.count)
    let tentativeRate = Double(receipts.count) / tentativeTime
    figure("ingest 100k receipts (verify+store), tentative", format(tentativeRate) + " /s")

    /// Committed ingest of every receipt with `envelopes` into a fresh file store: the rate.
    func committedIngest(_ name: String, _ envelopes: [Envelope], label: String) throws -> Double {
        let replica = try Replica(path: dir + "/\(name).sqlite", device: LocalDevice.generate(name: name, createdAt: 1))
        let time = try timed { _ = try replica.ingest(receipts: receipts, envelopes: envelopes) }
        let committed = try replica.vector(of: group).committed
        precondition(committed == UInt64(receipts.count))
        let consistent = try replica.stateHash(of: group, view: .committed) == replica.replayedStateHash(of: group)
        precondition(consistent)
        let rate = Double(receipts.count) / time
        figure(label, format(rate) + " /s")
        return rate
    }
    let committedRate = try committedIngest(
        "committed", envelopes, label: "ingest 100k receipts + envelopes, committed")
    let batchedRate = try committedIngest(
        "batched", runs, label: "ingest 100k receipts + batched envelopes (runs of 256)")
    print(
        pad("  so far: committed / raw verify", 46)
            + String(format: "%.2f single, %.2f batched", committedRate / rawVerify, batchedRate / rawVerify))

    // Local append latency: a solo group on a file store (each append is one fsync-free WAL commit).
    let appender = try Replica(path: dir + "/append.sqlite", device: owner)
    let solo = try appender.createGroup(name: "solo")
    var latencies = [Double]()
    for i in 0..<2_000 {
        latencies.append(
            try timed { try appender.append(.entityPut(key: "k\(i % 100)", value: .int(Int64(i))), to: solo) })
    }
    latencies.sort()
    let p50 = latencies[latencies.count / 2] * 1000
    let p99 = latencies[latencies.count * 99 / 100] * 1000
    figure("local append latency p50", String(format: "%.3f ms", p50))
    figure("local append latency p99", String(format: "%.3f ms", p99))

    // Opening a store of 1,000,000 receipts and answering a get, in a fresh process.
    let path = millionStore ?? dir + "/million.sqlite"
    if !FileManager.default.fileExists(atPath: path) {
        let build = try timed { try buildMillionStore(path: path, owner: owner) }
        figure("built 1M-receipt store", String(format: "%.0f s", build))
    }
    let child = Process()
    child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    child.arguments = ["open-get", path]
    let out = Pipe()
    child.standardOutput = out
    try child.run()
    child.waitUntilExit()
    let fields = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(
        whereSeparator: \.isWhitespace
    ).compactMap { Double($0) }
    if fields.count == 3 {
        figure("open 1M-receipt store + get (fresh process)", String(format: "%.3f s", fields[0]))
        figure("resident memory after open + get", String(format: "%.1f MiB", fields[1]))
        figure("store file size", String(format: "%.0f MiB", fields[2]))
    }

    print("")
    ratio("tentative ingest / raw verify (1 core)", tentativeRate / rawVerify, target: 0.6)
    ratio("committed ingest / raw verify (1 core)", committedRate / rawVerify, target: 0.6)
    ratio("committed ingest, batched envelopes / raw verify", batchedRate / rawVerify, target: 0.8)
    print(pad("append p99 target < 2 ms", 46) + pad(p99 < 2 ? "met" : "NOT met", 16, left: false))
    if fields.count == 3 {
        print(pad("open + get target < 0.5 s", 46) + pad(fields[0] < 0.5 ? "met" : "NOT met", 16, left: false))
    }
}

func signInParallel(_ items: [(UInt64, CID)], group: GroupID, key: Ed25519.PrivateKey) throws -> [Envelope] {
    let out = Mutex([Envelope?](repeating: nil, count: items.count))
    let chunks = 8
    DispatchQueue.concurrentPerform(iterations: chunks) { c in
        var local = [(Int, Envelope)]()
        for i in stride(from: c, to: items.count, by: chunks) {
            local.append(
                (
                    i,
                    try! Envelope.sign(
                        group: group, seq: items[i].0, receipt: items[i].1, term: 0, receivedAt: 1, key: key)
                ))
        }
        out.withLock { for (i, e) in local { $0[i] = e } }
    }
    return out.withLock { $0.map { $0! } }
}

/// A committed solo group of 1,000,000 receipts (100,000 distinct keys) with real signatures,
/// ingested in chunks of 20,000 with batched envelopes.
func buildMillionStore(path: String, owner: LocalDevice) throws {
    let replica = try Replica(path: path, device: owner)
    let group = try replica.createGroup(name: "million", id: try GroupID(bytes: [UInt8](repeating: 0x11, count: 16)))
    var previous = try replica.log(of: group, view: .committed)[0].receipt.cid
    let total = 1_000_000
    let chunk = 20_000
    var counter: UInt64 = 2
    while counter <= UInt64(total) {
        let upper = min(UInt64(total), counter + UInt64(chunk) - 1)
        let drafts = (counter...upper).map { c in
            Receipt.Draft(
                group: group, type: "entity.put", counter: c, parents: [],
                hlc: HLCTimestamp(physical: 2_000 + c, logical: 0),
                body: GroupOperation.entityPut(key: "k\(c % 100_000)", value: .textMap(["n": .int(Int64(c))])).body)
        }
        let signedChunk = Mutex([Receipt?](repeating: nil, count: drafts.count))
        DispatchQueue.concurrentPerform(iterations: 8) { t in
            var local = [(Int, Receipt)]()
            for i in stride(from: t, to: drafts.count, by: 8) { local.append((i, try! owner.sign(drafts[i]))) }
            signedChunk.withLock { for (i, r) in local { $0[i] = r } }
        }
        let receipts = signedChunk.withLock { $0.map { $0! } }
        // Committed through the public ingest, as a peer's catch-up would be: batched runs (§3.5).
        let runs = try EnvelopeRun.signRuns(
            group: group, firstSeq: counter, receipts: receipts.map(\.cid), term: 0, receivedAt: 1,
            key: owner.signingKey)
        let report = try replica.ingest(receipts: receipts, envelopes: runs)
        precondition(report.committed == receipts.count, "the million store's chunk at \(counter) did not commit whole")
        previous = receipts.last!.cid
        counter = upper + 1
    }
    _ = previous
}

/// Child mode: open the store, answer one get, print "seconds rss_mib file_mib".
func openAndGet(path: String) throws {
    let owner = try LocalDevice.generate(name: "reader", createdAt: 1)
    var value: CBOR?
    let t = try timed {
        let replica = try Replica(path: path, device: owner)
        value = try replica.entity(
            "k4242", in: try GroupID(bytes: [UInt8](repeating: 0x11, count: 16)), view: .tentative)?.value
    }
    precondition(value != nil, "the million store lacks k4242")
    let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    print(String(format: "%.4f %.1f %.0f", t, residentMiB(), Double(size) / 1_048_576))
}
