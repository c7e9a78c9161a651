import ArgumentParser
import Peerlog
import PeerlogEncoding

#if canImport(Glibc)
import Glibc
#endif

/// `peerlog put GROUP --batch FILE|-`: one JSON object a line, all written in one transaction.
enum PutBatch {
    /// Largest batch input read (16 MiB). JSON never encodes smaller than its CBOR value, so a
    /// batch within it stays within `ReplicaLimits.maxBatchPayloadBytes` (32 MiB) with room
    /// for every receipt's own fields.
    static let maxInputBytes = 16 * 1_048_576

    /// One operation and the line it came from (1-based).
    struct Line {
        let number: Int
        let op: PeerlogOperation
    }

    /// Most operations one `--batch` input holds: written `Peerlog.maxBatchOperations` (10,000)
    /// a transaction after all of them are checked.
    static let maxOperations = 100_000

    /// What goes with `--batch` (and `--stream`): no key, value or `--if-…` of the command line.
    static func checkArguments(_ put: Put) throws {
        guard put.key == nil, put.value == nil, put.valueFile == nil else {
            throw CLIError("--batch takes keys and values from its file: give no KEY, VALUE or --value-file with it")
        }
        guard try put.conditions.condition(json: false) == nil else {
            throw CLIError(
                #"--if-… options take one key: in a --batch file a line carries its own ("if": "absent", "if_version", "if_value")"#
            )
        }
    }

    static func run(_ put: Put, file: String) async throws {
        try checkArguments(put)
        let lines = try parse(try readInput(file), file: file, maxOperations: maxOperations)
        guard !lines.isEmpty else { throw CLIError("--batch \(file) holds no operations") }
        if put.atomic { return try await runAtomic(put, lines: lines, file: file) }
        let (peerlog, id) = try await put.home.open(put.group)
        let ops = lines.map(\.op)
        let chunk = Peerlog.maxBatchOperations
        var results = [PeerlogWrite]()
        do {
            if ops.count <= chunk {
                results = try await peerlog.putBatch(ops, in: id)
            } else {
                // Every line checked first (rules, offline limits): one bad line refuses the whole
                // input and nothing is written; then one transaction per `chunk` lines.
                try await peerlog.checkBatch(ops, in: id)
                for start in stride(from: 0, to: ops.count, by: chunk) {
                    results += try await peerlog.putBatch(Array(ops[start..<min(start + chunk, ops.count)]), in: id)
                    if !put.output.json { printError("wrote \(results.count) of \(ops.count) operations") }
                }
            }
        } catch let e as PeerlogError {
            guard let entry = e.batchEntry else { throw e }
            let written = results.isEmpty ? "nothing was written" : "the first \(results.count) were written"
            throw CLIError(
                "--batch \(file): line \(lines[results.count + entry.index].number): \(entry.reason); \(written)")
        }
        if put.wait.wait || ops.contains(where: { if case .transaction = $0 { true } else { false } }) {
            return try await reportBatchOutcomes(results, lines: lines, peerlog: peerlog, group: id, put: put)
        }
        printBatch(results, group: id, json: put.output.json)
    }

    /// `--atomic`: every line one operation of one transaction (one receipt), each line's
    /// condition on its key; at most `Peerlog.maxTransactionOperations` lines.
    static func runAtomic(_ put: Put, lines: [Line], file: String) async throws {
        guard lines.count <= Peerlog.maxTransactionOperations else {
            throw CLIError(
                "--batch \(file) --atomic: \(lines.count) operations, over the limit of \(Peerlog.maxTransactionOperations) for one transaction; nothing was written"
            )
        }
        var t = PeerlogTransaction()
        for line in lines { t.append(line.op) }
        let (peerlog, id) = try await put.home.open(put.group)
        let result = try await peerlog.write(t, in: id)
        try await reportOutcome(
            result, peerlog: peerlog, group: id,
            summary: "Wrote \(lines.count) operation\(lines.count == 1 ? "" : "s") as one transaction", wait: put.wait,
            json: put.output.json)
    }

    /// Each receipt's outcome (after `--wait`, its final one); exit 3 when any was rejected at
    /// commit, 4 when `--wait --timeout` passed with some still pending.
    static func reportBatchOutcomes(
        _ results: [PeerlogWrite], lines: [Line], peerlog: Peerlog, group: GroupID, put: Put
    ) async throws {
        let deadline = put.wait.timeout.map { ContinuousClock.now + .milliseconds(Int($0 * 1000)) }
        var outcomes = [PeerlogOutcome]()
        for r in results {
            var o = try await peerlog.outcome(of: r)
            if put.wait.wait, !o.isFinal {
                let left = deadline.map { max($0 - ContinuousClock.now, .milliseconds(1)) }
                o = try await peerlog.finalOutcome(of: r.cid, timeout: left) ?? o
            }
            outcomes.append(o)
        }
        let rejected = outcomes.indices.filter { if case .rejected = outcomes[$0] { true } else { false } }
        let pending = outcomes.filter { !$0.isFinal }.count
        if put.output.json {
            print(
                JSON.object([
                    ("group", .string(group.string)), ("count", .int(results.count)),
                    ("committed", .int(outcomes.count - rejected.count - pending)), ("rejected", .int(rejected.count)),
                    ("pending", .int(pending)),
                    (
                        "writes",
                        .array(
                            zip(results, outcomes).map { r, o in
                                .object([("cid", .string(r.cid.string))] + o.jsonFields)
                            }
                        )
                    ),
                ]).serialized(pretty: true))
        } else {
            print(
                "Wrote \(results.count) operation\(results.count == 1 ? "" : "s") in one transaction: \(outcomes.count - rejected.count - pending) committed, \(rejected.count) rejected at commit, \(pending) pending"
            )
            for i in rejected { print("line \(lines[i].number) (\(lines[i].op.key)): \(outcomes[i].text)") }
        }
        if !rejected.isEmpty { throw ExitCode(WriteExit.rejected) }
        if put.wait.wait, pending > 0 { throw ExitCode(WriteExit.pending) }
    }

    /// Every line checked before anything is written: the first bad one fails the batch.
    static func parse(_ bytes: [UInt8], file: String, maxOperations: Int) throws -> [Line] {
        var out = [Line]()
        var number = 0
        for raw in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false) {
            number += 1
            guard !isBlank(raw) else { continue }
            guard out.count < maxOperations else {
                throw CLIError(
                    "--batch \(file) has more than \(maxOperations) operations (the --batch limit): split it into several inputs"
                )
            }
            do {
                out.append(Line(number: number, op: try operation(raw)))
            } catch let e as CLIError {
                throw CLIError("--batch \(file): line \(number): \(e.description); nothing was written")
            }
        }
        return out
    }

    static let shape =
        #"a line is {"key": K, "value": V} or {"key": K, "delete": true}, with at most one of "if": "absent", "if_version": RECEIPT, "if_value": V"#

    /// One line: `{"key": K, "value": V}` (V as `put --json-value` takes it) or `{"key": K, "delete": true}`.
    static func operation(_ raw: ArraySlice<UInt8>) throws -> PeerlogOperation {
        guard let text = String(validating: raw, as: UTF8.self) else { throw CLIError("not UTF-8 text") }
        let json: JSON
        do { json = try JSON.parse(text) } catch { throw CLIError("malformed JSON: \(error)") }
        guard case .object(let fields) = json else { throw CLIError("not a JSON object: \(shape)") }
        var key: String?
        var value: JSON?
        var delete = false
        var conditions = [PeerlogCondition]()
        for (name, field) in fields {
            switch (name, field) {
            case ("key", .string(let k)): key = k
            case ("key", _): throw CLIError("\"key\" must be a string")
            case ("value", _): value = field
            case ("delete", .bool(true)): delete = true
            case ("delete", _): throw CLIError("\"delete\" must be true (to set a value, give \"value\")")
            case ("if", .string("absent")): conditions.append(.absent)
            case ("if", _): throw CLIError(#""if" must be "absent" (or use "if_version" / "if_value")"#)
            case ("if_version", .string(let s)):
                do { conditions.append(.version(try CID(string: s))) } catch {
                    throw CLIError("\"if_version\": not a receipt id (\(error))")
                }
            case ("if_version", _): throw CLIError("\"if_version\" must be a receipt id string")
            case ("if_value", _):
                do { conditions.append(.value(try CBOR(json: field, allowFloats: false))) } catch {
                    throw CLIError("if_value: \(error)")
                }
            default: throw CLIError("unknown field \"\(name)\": \(shape)")
            }
        }
        guard let key else { throw CLIError("missing \"key\": \(shape)") }
        guard conditions.count <= 1 else { throw CLIError("give at most one of \"if\", \"if_version\", \"if_value\"") }
        let op: PeerlogOperation
        switch (value, delete) {
        case (let value?, false):
            do { op = .put(key: key, value: try CBOR(json: value, allowFloats: false)) } catch {
                throw CLIError("value: \(error)")
            }
        case (nil, true): op = .delete(key: key)
        case (nil, false): throw CLIError("missing \"value\" (or \"delete\": true): \(shape)")
        case (.some, true): throw CLIError("give \"value\" or \"delete\": true, not both")
        }
        guard let condition = conditions.first else { return op }
        var t = PeerlogTransaction()
        t.require(key, condition)
        t.append(op)
        return .transaction(t)
    }

    /// A line of spaces, tabs and carriage returns only (skipped).
    static func isBlank(_ raw: ArraySlice<UInt8>) -> Bool { raw.allSatisfy { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D } }

    /// The descriptor of `--batch FILE` (standard input for -); the caller closes any but 0.
    static func openInput(_ file: String) throws -> Int32 {
        let fd = file == "-" ? 0 : open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError("cannot open --batch \(file): \(String(cString: strerror(errno)))") }
        return fd
    }

    /// One `read(2)` into `chunk` (retried when interrupted): the bytes read, 0 at the end.
    static func readChunk(_ fd: Int32, into chunk: inout [UInt8], file: String) throws -> Int {
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw CLIError("cannot read --batch \(file): \(String(cString: strerror(errno)))") }
            return n
        }
    }

    /// The file's (or standard input's) bytes, refused past `maxInputBytes`.
    static func readInput(_ file: String) throws -> [UInt8] {
        let fd = try openInput(file)
        defer { if fd != 0 { close(fd) } }
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let n = try readChunk(fd, into: &chunk, file: file)
            if n == 0 { break }
            bytes += chunk[0..<n]
            guard bytes.count <= maxInputBytes else {
                throw CLIError(
                    "--batch \(file) is over \(maxInputBytes) bytes (16 MiB, the batch input limit): split it into several batches"
                )
            }
        }
        return bytes
    }

    /// One summary: how many, the first and last receipt, committed or tentative.
    static func printBatch(_ results: [PeerlogWrite], group: GroupID, json: Bool) {
        let seqs = results.compactMap(\.seq)
        let status = seqs.count == results.count ? "committed" : seqs.isEmpty ? "tentative" : "partly committed"
        if json {
            print(
                JSON.object([
                    ("group", .string(group.string)), ("count", .int(results.count)), ("status", .string(status)),
                    ("first_seq", seqs.first.map { .int($0) } ?? .null),
                    ("last_seq", seqs.last.map { .int($0) } ?? .null),
                    ("cids", .array(results.map { .string($0.cid.string) })),
                ]).serialized(pretty: true))
            return
        }
        let (first, last) = (results.first!.cid, results.last!.cid)
        print("Wrote \(results.count) operation\(results.count == 1 ? "" : "s") in one transaction")
        let receipts = results.count == 1 ? "receipt \(first)" : "receipts \(first) ... \(last)"
        switch status {
        case "committed":
            print(
                "\(receipts): committed at seq\(seqs.count == 1 ? " \(seqs[0])" : "s \(seqs.first!)...\(seqs.last!)")")
        case "tentative": print("\(receipts): tentative (waiting for the group's sequencer)")
        default:
            print(
                "\(receipts): \(seqs.count) committed (seqs \(seqs.first!)...\(seqs.last!)), \(results.count - seqs.count) tentative"
            )
        }
    }
}
