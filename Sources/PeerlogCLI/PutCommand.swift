import ArgumentParser
import Foundation
import Peerlog
import PeerlogEncoding

#if canImport(Glibc)
import Glibc
#endif

struct Put: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Set an entity's value in a group, or write a batch of sets and deletes.",
        discussion: """
            The value comes from VALUE or from --value-file (a file, or - for standard input). A file over \
            \(Peerlog.blobThresholdBytes) bytes, one that is not UTF-8 text, or any with --blob, is stored as a \
            blob of any size up to 64 GiB: the receipt carries a reference (id, size, and in an encrypted group the \
            key), commits and syncs at once, and peers fetch the bytes after it, each chunk checked (`peerlog get \
            --out`, `peerlog blob`). A smaller text file is the value itself, as text. A receipt's payload is at \
            most \(Peerlog.maxPayloadBytes) bytes (64 KiB).

            --batch FILE (- for standard input) writes many operations, each its own receipt, one \
            transaction per \(Peerlog.maxBatchOperations): one JSON object a line, {"key": K, "value": V} or \
            {"key": K, "delete": true}, values as --json-value takes them (blank lines are skipped). Every \
            line is checked before anything is written, against the group's rules and offline limits too \
            (the earlier lines included): one bad line refuses the whole input, naming the line. Limits: \
            \(PutBatch.maxOperations) operations and \(PutBatch.maxInputBytes) bytes (16 MiB) of input; split \
            larger input into several.

            --batch FILE --stream writes each line as it arrives instead, for a producer that keeps \
            writing (`tail -f app.log | … | peerlog put GROUP --batch - --stream`): the lines of each read \
            go in one transaction, so a slow producer gets one commit a line and a fast one large \
            transactions, and each line is acknowledged on standard output once stored ("line N: KEY \
            RECEIPT committed at seq S" or "… tentative"; with --json one object a line). A connected \
            daemon of the home sends it on at once. The first bad line stops the stream with exit status \
            1, naming it; the lines before it stay written. No input limit; a line is at most \
            \(PutStream.maxLineBytes) bytes.

            Offline limits: when too many of this device's writes wait for the group's sequencer, or the \
            oldest has waited too long (see `peerlog group limits`), a write or a whole batch fails with \
            exit status 75 and nothing is written; it passes once the sequencer commits them.
            """
    )
    @OptionGroup var home: HomeOptions
    @OptionGroup var group: GroupArgument
    @Argument(help: "The entity key (not with --batch).") var key: String?
    @Argument(help: "The value: a string, or JSON with --json-value.") var value: String?
    @Option(
        help: ArgumentHelp(
            "Read the value from this file (- for standard input) instead of VALUE, exactly as it is (a final newline included).",
            valueName: "file"))
    var valueFile: String?
    @Flag(help: "Store --value-file as a blob whatever its size.") var blob = false
    @Flag(
        help:
            "Parse the value as JSON (integers, strings, arrays, objects, true/false/null; {\"$bytes\": hex}; no floats)."
    ) var jsonValue = false
    @Option(
        help: ArgumentHelp(
            "Write the operations of this file (- for standard input), one JSON object a line, in one transaction.",
            valueName: "file"))
    var batch: String?
    @Flag(
        help:
            "With --batch: write every line as one transaction (one receipt), applied all or none at its committed position."
    ) var atomic = false
    @Flag(
        help:
            "With --batch: write each line as it arrives (a pipe, a FIFO) and acknowledge it on standard output once stored, until the input ends."
    ) var stream = false
    @OptionGroup var conditions: ConditionOptions
    @OptionGroup var wait: WaitOptions
    @OptionGroup var output: OutputOptions

    /// Larger files cannot fit in a payload even as JSON with hex bytes, so they are not read whole.
    static let maxValueFileBytes = 4 * Peerlog.maxPayloadBytes

    func run() async throws {
        if let batch {
            if stream {
                try PutBatch.checkArguments(self)
                return try await PutStream.run(self, file: batch)
            }
            return try await PutBatch.run(self, file: batch)
        }
        if stream { throw CLIError("--stream goes with --batch FILE (- for standard input)") }
        // Checked here, not in validate(), so the error is one line like every other.
        guard let key else { throw CLIError("give the entity key (or --batch FILE)") }
        let text: String
        if blob && (valueFile == nil || jsonValue) {
            throw CLIError("--blob stores --value-file as it is: give --value-file, without --json-value")
        }
        if atomic { throw CLIError("--atomic goes with --batch") }
        if let file = valueFile, value == nil, !jsonValue, try blob || Self.isLarge(file) {
            if try conditions.condition(json: false) != nil {
                throw CLIError("conditions (--if-…) apply to values, not to blobs: store the blob, then write its key")
            }
            return try await putBlob(key, file: file)
        }
        switch (value, valueFile) {
        case (let value?, nil): text = value
        case (nil, let file?): text = try Self.readValue(from: file)
        case (nil, nil): throw CLIError("give the value: VALUE or --value-file FILE (- for standard input)")
        case (.some, .some): throw CLIError("give the value once: VALUE or --value-file, not both")
        }
        let cbor: CBOR
        if jsonValue {
            do { cbor = try CBOR(json: try JSON.parse(text), allowFloats: false) } catch {
                throw CLIError("\(valueFile ?? "VALUE"): \(error)")
            }
        } else {
            cbor = .text(text)
        }
        let (peerlog, id) = try await home.open(group)
        if let condition = try conditions.condition(json: jsonValue) {
            var t = PeerlogTransaction()
            t.require(key, condition)
            t.put(key, cbor: cbor)
            let result = try await peerlog.write(t, in: id)
            return try await reportOutcome(
                result, peerlog: peerlog, group: id, summary: "Set \"\(key)\" if \(condition.text)", wait: wait,
                json: output.json)
        }
        let result = try await peerlog.put(key, cbor: cbor, in: id)
        if wait.wait {
            return try await reportOutcome(
                result, peerlog: peerlog, group: id, summary: "Set \"\(key)\"", wait: wait, json: output.json)
        }
        printAppend(result, group: id, summary: "Set \"\(key)\"", json: output.json)
    }

    /// Whether a file is stored as a blob when --blob is not given: over the threshold, or not
    /// UTF-8 text. Standard input is read as a value unless --blob.
    static func isLarge(_ file: String) throws -> Bool {
        guard file != "-" else { return false }
        var st = stat()
        guard stat(file, &st) == 0 else {
            throw CLIError("cannot open --value-file \(file): \(String(cString: strerror(errno)))")
        }
        if st.st_size > Peerlog.blobThresholdBytes { return true }
        guard let bytes = FileManager.default.contents(atPath: file) else { return false }
        return String(validating: [UInt8](bytes), as: UTF8.self) == nil
    }

    func putBlob(_ key: String, file: String) async throws {
        let (peerlog, id) = try await home.open(group)
        let terminal = isatty(2) == 1
        let result = try await peerlog.put(key, file: file, in: id) { read in
            if terminal {
                FileHandle.standardError.write(
                    Data(String(format: "\r\u{1b}[Kstoring %.1f MiB", Double(read) / 1_048_576).utf8))
            }
        }
        if terminal { FileHandle.standardError.write(Data("\r\u{1b}[K".utf8)) }
        let blob = try await peerlog.blob(key, in: id)
        printAppend(
            result, group: id, summary: "Set \"\(key)\" to blob \(blob?.id.string ?? "?") (\(blob?.size ?? 0) bytes)",
            json: output.json)
    }

    /// The file's (or standard input's) bytes as text; they must be UTF-8.
    static func readValue(from file: String) throws -> String {
        let fd = file == "-" ? 0 : open(file, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CLIError("cannot open --value-file \(file): \(String(cString: strerror(errno)))") }
        defer { if fd != 0 { close(fd) } }
        var bytes = [UInt8]()
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else {
                throw CLIError("cannot read --value-file \(file): \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes += chunk[0..<n]
            guard bytes.count <= maxValueFileBytes else {
                throw CLIError(
                    "--value-file \(file) is over \(maxValueFileBytes) bytes, and a value must fit in a \(Peerlog.maxPayloadBytes)-byte (64 KiB) receipt payload; "
                        + "give --blob to store it as a blob of any size"
                )
            }
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw CLIError("--value-file \(file) is not UTF-8 text")
        }
        return text
    }
}
