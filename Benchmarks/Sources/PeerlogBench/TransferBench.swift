import Foundation
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel

#if canImport(Glibc)
import Glibc
#endif

/// `peerlog-bench transfer [N] [--old N_OLD]`: the real `peerlog export` and `peerlog import`
/// processes on a group of N committed receipts, each one's peak RSS (the kernel's `ru_maxrss`
/// of the child, from wait4) and time; issue 18's figure is < 128 MiB each at N = 1,000,000.
/// With `--old N_OLD`, the same export file's first N_OLD receipts are also imported the way
/// the code before the streaming import did (read the whole file, parse every line, one
/// `ingest` call), in a child of its own, to show how that grows.
func transferBench(count: Int, oldCount: Int?) throws {
    let peerlog = try BenchDaemon.binary
    let dir = NSTemporaryDirectory() + "peerlog-transfer-\(getpid())"
    for home in ["source", "target", "old"] {
        try FileManager.default.createDirectory(atPath: dir + "/" + home, withIntermediateDirectories: true)
    }
    defer { try? FileManager.default.removeItem(atPath: dir) }

    let owner = try LocalDevice.generate(name: "owner", createdAt: 1)
    try owner.save(home: dir + "/source")
    try LocalDevice.generate(name: "target", createdAt: 1).save(home: dir + "/target")
    try LocalDevice.generate(name: "old", createdAt: 1).save(home: dir + "/old")
    let group: GroupID
    let buildSeconds: Double
    do {
        let source = try Replica(path: dir + "/source/replica.sqlite", device: owner)
        group = try source.createGroup(name: "bench")
        let batch = source.limits.maxBatchOperations
        buildSeconds = try timed {
            var written = 1
            while written < count {
                let size = min(batch, count - written)
                let ops = (written..<written + size).map { i in
                    GroupOperation.entityPut(
                        key: "k\(i % 10_000)",
                        value: .textMap(["n": .int(Int64(i)), "pad": .bytes([UInt8](repeating: 7, count: 48))]))
                }
                _ = try source.appendBatch(ops, to: group)
                written += size
            }
        }
    }
    figure("store built (appendBatch, committed)", String(format: "%.1f s", buildSeconds))

    let file = dir + "/group.export"
    let export = try measuredRun(peerlog, ["export", "--home", dir + "/source", group.string, file])
    guard export.status == 0 else { throw BenchError("peerlog export exited \(export.status)") }
    let size = (try FileManager.default.attributesOfItem(atPath: file)[.size] as? Int) ?? 0
    let imported = try measuredRun(peerlog, ["import", "--home", dir + "/target", file])
    guard imported.status == 0 else { throw BenchError("peerlog import exited \(imported.status)") }

    print("receipts \(count), export file \(mebibytes(size))")
    figure("peerlog export: peak RSS", mebibytes(export.maxRSS))
    figure(
        "peerlog export: time",
        String(format: "%.1f s (%@ receipts/s)", export.seconds, format(Double(count) / export.seconds)))
    figure("peerlog import: peak RSS", mebibytes(imported.maxRSS))
    figure(
        "peerlog import: time",
        String(format: "%.1f s (%@ receipts/s)", imported.seconds, format(Double(count) / imported.seconds)))
    let limit = 128 * 1_048_576
    figure("peak RSS / 128 MiB target (export)", String(format: "%.2f", Double(export.maxRSS) / Double(limit)))
    figure("peak RSS / 128 MiB target (import)", String(format: "%.2f", Double(imported.maxRSS) / Double(limit)))

    guard let oldCount else { return }
    // The first oldCount receipts and their envelopes, as a file of their own.
    let small = dir + "/small.export"
    try firstReceipts(of: file, count: oldCount, to: small)
    let streamed = try measuredRun(peerlog, ["import", "--home", dir + "/old", small])
    try? FileManager.default.removeItem(atPath: dir + "/old/replica.sqlite")
    let whole = try measuredRun(CommandLine.arguments[0], ["transfer-old-import", dir + "/old", small])
    guard streamed.status == 0, whole.status == 0 else { throw BenchError("the \(oldCount)-receipt imports failed") }
    print("first \(oldCount) receipts:")
    figure("streaming import: peak RSS", mebibytes(streamed.maxRSS))
    figure("whole-file import (before): peak RSS", mebibytes(whole.maxRSS))
    figure("whole-file / streaming", String(format: "%.2f", Double(whole.maxRSS) / Double(streamed.maxRSS)))
}

/// The import as it was before streaming, in this process: the whole file in memory, every
/// line parsed, one `ingest` of everything (for `transfer --old`).
func oldWholeFileImport(home: String, file: String) throws {
    let replica = try Replica(path: home + "/replica.sqlite", device: try LocalDevice.load(home: home))
    let contents = try FileIO.read(file, maxBytes: 1 << 30)
    let lines = String(decoding: contents, as: UTF8.self).split(separator: "\n").map(String.init)
    var receipts = [Receipt]()
    var envelopes = [Envelope]()
    for line in lines.dropFirst() {
        let json = try JSON.parse(line)
        guard case .string(let kind)? = json["kind"], case .string(let hex)? = json["data"],
            let data = PeerlogCrypto.bytes(fromHex: hex)
        else { throw BenchError("bad line") }
        if kind == "receipt" {
            receipts.append(try Receipt(encoded: data))
        } else {
            envelopes.append(try Envelope(encoded: data))
        }
    }
    _ = try replica.ingest(receipts: receipts, envelopes: envelopes)
}

/// Writes the header, the first `count` receipt lines and the envelopes naming them (a group
/// written by one device: its receipts and seqs are in the same order).
private func firstReceipts(of file: String, count: Int, to out: String) throws {
    let reader = try FileLines(path: file, maxLineBytes: ReplicaLimits().maxImportLineBytes)
    let writer = try NewFile(path: out, mode: 0o644)
    _ = try reader.next()
    try writer.write(
        line: JSON.object([
            ("format", .string(Replica.exportFormat)), ("version", .int(Replica.exportVersion)),
            ("receipts", .int(count)), ("envelopes", .int(count)),
        ]).serialized())
    var receipts = 0
    var envelopes = 0
    while let line = try reader.next() {
        if line.contains(#""kind":"receipt""#) {
            if receipts < count { try writer.write(line: line) }
            receipts += 1
        } else if envelopes < count {
            try writer.write(line: line)
            envelopes += 1
        }
    }
    try writer.commit()
}

/// Runs a program to its end; returns its exit status, wall time and peak resident memory in
/// bytes: the kernel's high-water mark of the child's own address space (`VmHWM`, sampled every
/// 50 ms by `ProcessMemory`). Not wait4's `ru_maxrss`: posix_spawn starts the child sharing this
/// process's memory (vfork), and exec carries that memory's high-water mark into the child's
/// `ru_maxrss`, so it reported this benchmark's own size (about 125 MiB) for every child.
func measuredRun(_ program: String, _ arguments: [String]) throws -> (status: Int32, seconds: Double, maxRSS: Int) {
    var pid: pid_t = 0
    let argv = ([program] + arguments).map { strdup($0) } + [nil]
    defer { for a in argv { free(a) } }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
    let began = ContinuousClock.now
    let spawned = posix_spawn(&pid, program, &actions, nil, argv, environ)
    guard spawned == 0 else { throw BenchError("cannot start \(program): \(String(cString: strerror(spawned)))") }
    let memory = ProcessMemory(pid: pid, every: 0.05)
    var status: Int32 = 0
    // Sampled until the child exits (waitid with WNOWAIT leaves it to reap, /proc still readable).
    var info = siginfo_t()
    while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 {
        guard errno == EINTR else { throw BenchError("waitid: \(String(cString: strerror(errno)))") }
    }
    let peak = memory.peak
    memory.stop()
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw BenchError("waitpid: \(String(cString: strerror(errno)))") }
    }
    let elapsed = ContinuousClock.now - began
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    let exitStatus = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return (exitStatus, seconds, peak)
}
