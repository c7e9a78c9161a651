import Foundation
import Peerlog
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// `peerlog-bench blobs [SIZES_MB] [--big MB] [--writes N]`: issue 34's figures, ratios from the
/// same run. Two `Peerlog`s in this process, each running its node (real TCP on loopback, Noise),
/// Bob dialing Ann, with a plaintext and an encrypted group:
///
/// - each size (default 5 and 50 MB) put on Ann from a file until Bob holds it whole and checked
///   (Bob prefetches blobs up to 64 MiB when the value arrives; polled every millisecond);
/// - a `--big` blob (default 1,024 MiB) fetched by Bob, as a rate and as a ratio to the Noise
///   channel's bulk rate between two processes measured first in this run;
/// - `--writes` small writes on Ann (default 200, one every 20 ms), from the put until Bob's
///   change stream shows each, on an idle connection and during that transfer;
/// - the resident memory the process gains during the transfer (both nodes);
/// - the same 100 MB put twice in each group: bytes in Ann's blob directory.
func blobBench(sizes: [Int], bigMiB: Int, writes: Int) async throws {
    let noise = try noiseBulk(megabytes: 512)
    let noiseRate = noise.rate
    print("\n== blobs between two nodes on loopback (one process)")
    let ann = try await Peerlog.temporary(deviceName: "ann")
    let bob = try await Peerlog.temporary(deviceName: "bob")
    let scratch = NSTemporaryDirectory() + "peerlog-blob-bench-\(getpid())"
    try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    let groups = [
        ("plaintext", try await ann.createGroup(named: "plain", encrypted: false)),
        ("encrypted", try await ann.createGroup(named: "sealed")),
    ]
    for (_, g) in groups { try await ann.invite(bob.identity, to: g) }

    var options = NetworkOptions()
    options.discovery = false  // loopback only
    options.listen = PeerAddress(host: "127.0.0.1", port: 0)
    let bound = AsyncStream<PeerAddress?>.makeStream()
    let annRun = Task { try await ann.run(options) { bound.continuation.yield($0) } }
    var iterator = bound.stream.makeAsyncIterator()
    guard let port = await iterator.next()??.port else { throw BenchError("ann did not listen") }
    var bobOptions = options
    bobOptions.listen = nil
    bobOptions.peers = [PeerAddress(host: "127.0.0.1", port: port)]
    bobOptions.allow = [ann.identity]
    let bobRun = Task { try await bob.run(bobOptions) }
    defer {
        annRun.cancel()
        bobRun.cancel()
    }
    for (_, g) in groups {
        try await waitFor("Bob's invitation") { try await bob.invitations().contains { $0.id == g } }
        try await bob.acceptInvitation(to: g)
    }
    // Bob's change stream: when each key first showed there.
    let arrived = Arrivals()
    let watcher = Task {
        for try await change in bob.changes() {
            if case .entity(let e) = change.event {
                let now = ContinuousClock.now
                arrived.withLock { if $0[e.key] == nil { $0[e.key] = now } }
            }
        }
    }
    defer { watcher.cancel() }
    try await ann.put("ready", "1", in: groups[0].1)
    try await waitFor("Bob's first value") { arrived.withLock { $0["ready"] != nil } }

    func file(megabytes: Int, name: String) throws -> String {
        let path = scratch + "/" + name
        // Incompressible bytes from a SplitMix64 stream seeded at random: one system random
        // call per file, not one per word (getrandom per word took most of the run's time).
        var state = UInt64.random(in: 0...UInt64.max)
        var words = [UInt64](repeating: 0, count: (1 << 20) / 8)
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        for _ in 0..<megabytes {
            for i in words.indices {
                state &+= 0x9E37_79B9_7F4A_7C15
                var z = state
                z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
                z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
                words[i] = z ^ (z >> 31)
            }
            try words.withUnsafeBytes { try handle.write(contentsOf: Data($0)) }
        }
        try handle.close()
        return path
    }
    func ms(_ d: Duration) -> Double { Double(d.components.seconds) * 1e3 + Double(d.components.attoseconds) / 1e15 }

    for size in sizes {
        let path = try file(megabytes: size, name: "f\(size)")
        for (kind, g) in groups {
            let key = "file/\(size)/\(kind)"
            let start = ContinuousClock.now
            try await ann.put(key, file: path, in: g)
            let put = ContinuousClock.now - start
            try await waitFor("Bob holding \(key)", every: .milliseconds(1)) {
                try await bob.blob(key, in: g)?.isHeld == true
            }
            let held = ContinuousClock.now - start
            guard try await bob.blobData(key, in: g) == Data(contentsOf: URL(fileURLWithPath: path)) else {
                throw BenchError("Bob's bytes of \(key) differ")
            }
            figure(
                "\(size) MiB \(kind): put on Ann until Bob holds it",
                String(format: "%.0f ms (put %.0f)", ms(held), ms(put)))
        }
    }

    /// Small writes on Ann, one every 20 ms; the time until Bob's change stream shows each.
    func smallWrites(_ label: String, in group: GroupID) async throws {
        var started: [String: ContinuousClock.Instant] = [:]
        for i in 0..<writes {
            let key = "small/\(label)/\(i)"
            started[key] = ContinuousClock.now
            try await ann.put(key, "\(i)", in: group)
            try await Task.sleep(for: .milliseconds(20))
        }
        try await waitFor("Bob seeing the small writes") {
            arrived.withLock { seen in started.keys.allSatisfy { seen[$0] != nil } }
        }
        let latencies = arrived.withLock { seen in started.map { ms(seen[$0.key]! - $0.value) } }.sorted()
        func at(_ p: Double) -> Double { latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))] }
        figure(
            "small write until Bob has it, \(label)",
            String(format: "p50 %.1f  p99 %.1f  max %.1f ms", at(0.5), at(0.99), latencies.last!))
    }

    let (_, plain) = groups[0]
    try await smallWrites("idle", in: plain)
    let big = try file(megabytes: bigMiB, name: "big")
    try await ann.put("big", file: big, in: plain)
    try await waitFor("Bob's reference to the big blob") { try await bob.blob("big", in: plain) != nil }
    let memory = ProcessMemory(pid: getpid(), every: 0.05)
    let before = memory.current
    let start = ContinuousClock.now
    let cpuBefore = cpuSeconds()
    _ = try await bob.fetchBlob("big", in: plain)
    let during = Task { try await smallWrites("during the \(bigMiB) MiB transfer", in: plain) }
    try await waitFor("Bob holding the big blob", every: .milliseconds(2), timeout: .seconds(900)) {
        try await bob.blob("big", in: plain)?.isHeld == true
    }
    let transfer = ContinuousClock.now - start
    let cpuPerGiB = (cpuSeconds() - cpuBefore) / (Double(bigMiB) / 1024)
    let rss = memory.sampledPeak - before
    memory.stop()
    try await during.value
    let rate = Double(bigMiB << 20) / (ms(transfer) / 1e3)
    figure("\(bigMiB) MiB fetched by Bob", String(format: "%.0f ms, %.0f MB/s", ms(transfer), rate / 1e6))
    ratio("blob transfer / Noise bulk (2 processes)", rate / noiseRate, target: 0.8)
    // What bounds the ratio on a machine whose cores both ends share: the CPU each GiB takes.
    let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
    figure(
        "  CPU per GiB, both nodes (Noise alone: \(String(format: "%.2f", noise.cpuPerGiB)))",
        String(format: "%.2f s", cpuPerGiB))
    ratio(
        "  the ratio were every core of \(Int(cores)) busy with the transfer",
        Double(1 << 30) / (cpuPerGiB / cores) / noiseRate)
    figure("resident memory gained during it (both nodes)", mebibytes(max(0, rss)))

    let twice = try file(megabytes: 100, name: "twice")
    for (kind, g) in groups {
        let blobs = ann.home + "/blobs"
        let before = directoryBytes(blobs)
        try await ann.put("twice/1", file: twice, in: g)
        try await ann.put("twice/2", file: twice, in: g)
        figure(
            "100 MiB put twice, \(kind): bytes stored", mebibytes(Int(directoryBytes(blobs) - before)))
    }
}

/// When each key first showed in a change stream.
final class Arrivals: Sendable {
    private let seen = Mutex<[String: ContinuousClock.Instant]>([:])
    func withLock<T>(_ body: (inout [String: ContinuousClock.Instant]) -> T) -> T { seen.withLock { body(&$0) } }
}

/// Bytes of the regular files directly in `path`.
func directoryBytes(_ path: String) -> UInt64 {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    return names.reduce(0) { sum, name in
        var st = stat()
        return stat(path + "/" + name, &st) == 0 ? sum + UInt64(st.st_size) : sum
    }
}

/// Polls `condition` until it holds; throws after `timeout`.
func waitFor(
    _ what: String, every interval: Duration = .milliseconds(10), timeout: Duration = .seconds(300),
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw BenchError("gave up waiting for \(what)") }
        try await Task.sleep(for: interval)
    }
}
