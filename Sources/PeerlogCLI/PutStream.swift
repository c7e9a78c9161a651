import Dispatch
import Peerlog
import PeerlogEncoding

#if canImport(Glibc)
import Glibc
#endif

/// `peerlog put GROUP --batch FILE|- --stream`: the lines of a `--batch` input written as they
/// arrive, for producers that never end (`tail -f`, a sensor, a log shipper). Each read's
/// complete lines go in one transaction: one line at a time when they trickle in, many when
/// they come faster than a commit. A line is acknowledged on standard output once committed to
/// the store, and a daemon of the home is told at once. The first bad line stops the stream:
/// the lines before it stay written, and it is named.
enum PutStream {
    /// Longest line (1 MiB): a receipt payload (64 KiB) as JSON with hex bytes, with room.
    static let maxLineBytes = 1 << 20

    static func run(_ put: Put, file: String) async throws {
        guard !put.atomic else {
            throw CLIError("--stream writes each line as it arrives; --atomic needs the whole input first")
        }
        guard !put.wait.wait else {
            throw CLIError("--stream acknowledges each line when stored; ask for outcomes with `peerlog write-status`")
        }
        let fd = try PutBatch.openInput(file)
        defer { if fd != 0 { close(fd) } }
        let (peerlog, id) = try await put.home.open(put.group)
        let reader = LineReader(fd: fd, file: file, maxLineBytes: maxLineBytes)
        var number = 0
        var written = 0
        var batch = [PutBatch.Line]()
        func stop(_ message: String) -> CLIError {
            CLIError(
                "--batch \(file): \(message); \(written) line\(written == 1 ? " was" : "s were") written before it")
        }
        /// One transaction of the lines gathered, each acknowledged.
        func commit() async throws {
            try await write(batch, peerlog: peerlog, group: id, json: put.output.json, stop: stop)
            written += batch.count
            batch.removeAll(keepingCapacity: true)
        }
        while let lines = try await reader.next() {
            for raw in lines {
                number += 1
                guard !PutBatch.isBlank(raw[...]) else { continue }
                do {
                    batch.append(PutBatch.Line(number: number, op: try PutBatch.operation(raw[...])))
                } catch let e as CLIError {
                    // The valid lines of this read first, so everything before the bad line is written.
                    try await commit()
                    throw stop("line \(number): \(e.description)")
                }
                if batch.count == Peerlog.maxBatchOperations { try await commit() }
            }
            try await commit()
        }
        if reader.overlong { throw stop("a line is over \(maxLineBytes) bytes (the --stream line limit)") }
        if !put.output.json { printError("wrote \(written) line\(written == 1 ? "" : "s")") }
    }

    /// One transaction; each line acknowledged on standard output, flushed.
    static func write(
        _ batch: [PutBatch.Line], peerlog: Peerlog, group: GroupID, json: Bool, stop: (String) -> CLIError
    ) async throws {
        guard !batch.isEmpty else { return }
        let results: [PeerlogWrite]
        do { results = try await peerlog.putBatch(batch.map(\.op), in: group) } catch let e as PeerlogError {
            // An offline limit keeps its exit status (75): the same lines pass later.
            guard let entry = e.batchEntry, e.code != .offlineLimit else { throw e }
            throw stop("line \(batch[entry.index].number): \(entry.reason)")
        }
        for (line, r) in zip(batch, results) {
            if json {
                print(
                    JSON.object([
                        ("line", .int(line.number)), ("key", .string(line.op.key)), ("cid", .string(r.cid.string)),
                        ("seq", r.seq.map { .int($0) } ?? .null),
                        ("status", .string(r.isTentative ? "tentative" : "committed")),
                    ]).serialized(pretty: false))
            } else {
                let status = r.seq.map { "committed at seq \($0)" } ?? "tentative"
                print("line \(line.number): \(line.op.key) \(r.cid) \(status)")
            }
        }
        fflushStdout()
    }
}

/// Complete lines from a file descriptor, as many as one read returns. The blocking read runs
/// on its own dispatch queue, never on Swift's cooperative threads, and only when asked: while
/// a transaction commits, new lines wait in the pipe (a fast producer blocks on it).
final class LineReader: @unchecked Sendable {
    private let fd: Int32
    private let file: String
    private let maxLineBytes: Int
    private let queue = DispatchQueue(label: "peerlog.put.stream")
    // Touched only by `next`, one call at a time.
    private var pending = [UInt8]()
    private var ended = false
    /// The input stopped at a line over `maxLineBytes` (`next` returned nil there).
    private(set) var overlong = false

    init(fd: Int32, file: String, maxLineBytes: Int) {
        self.fd = fd
        self.file = file
        self.maxLineBytes = maxLineBytes
    }

    /// The next complete lines (a last line without a newline included at the end), nil at the
    /// end of the input or at a line over the limit (`overlong`).
    func next() async throws -> [[UInt8]]? {
        while !ended {
            let chunk = try await read()
            if chunk.isEmpty { ended = true } else { pending += chunk }
            guard let cut = pending.lastIndex(of: UInt8(ascii: "\n")) else {
                if pending.count > maxLineBytes {
                    overlong = true
                    return nil
                }
                continue
            }
            let lines = pending[..<cut].split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
            pending.removeSubrange(...cut)
            return lines.map { Array($0) }
        }
        guard !pending.isEmpty else { return nil }
        defer { pending = [] }
        return [pending]
    }

    private func read() async throws -> [UInt8] {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { [fd, file] in
                var buffer = [UInt8](repeating: 0, count: 1 << 16)
                continuation.resume(
                    with: Result {
                        let n = try PutBatch.readChunk(fd, into: &buffer, file: file)
                        return Array(buffer[0..<n])
                    })
            }
        }
    }
}
