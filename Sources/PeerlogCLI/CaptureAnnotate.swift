import ArgumentParser
import PeerlogCapture
import PeerlogCaptureTools

/// `peerlog capture annotate CAPTURE --keylog FILE --output OUT`.
struct CaptureAnnotate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "annotate",
        abstract: "Copy a capture, with the opened body of each sealed receipt as its packet's comment.",
        discussion: """
            Encrypted groups' receipts carry sealed bodies (docs/PROTOCOL.md §22.3), which the Wireshark dissector \
            shows as ciphertext. Given the epoch keys (`peerlog group keys`), this writes a copy in which every \
            packet whose message holds such receipts carries a pcapng comment, one line per receipt: \
            "plaintext CID: BODY" in CBOR diagnostic notation (Wireshark: Packet comments, field frame.comment). \
            Records are copied unchanged. The copy holds what the encryption protects: keep it as you would the keys.
            """)

    @Argument(help: "A capture file (pcapng written by `daemon --capture`, `capture start` or `capture decrypt`).")
    var file: String
    @OptionGroup var keys: EpochKeyLogOption
    @Option(name: .shortAndLong, help: ArgumentHelp("The annotated capture to write.", valueName: "file"))
    var output: String

    func validate() throws {
        if keys.keylog == nil {
            throw ValidationError("--keylog is required (the epoch keys, from `peerlog group keys`)")
        }
        if output == file { throw ValidationError("--output must be another file than the capture") }
    }

    func run() throws {
        let keyLog = try keys.load()
        let capture: CaptureFile
        do { capture = try CaptureFile(path: file) } catch let e as CaptureError { throw CLIError("\(e)") }
        let writer = try CaptureWriter(path: output)
        var annotated = 0
        var opened = 0
        var sealed = 0
        for (i, var record) in capture.records.enumerated() {
            let view = RecordView(index: i + 1, record: record, keys: keyLog)
            var lines = [String]()
            for item in view.items {
                if let body = item.fields.first(where: { $0.0 == "plaintext" })?.1 {
                    lines.append("plaintext \(item.cid?.string ?? "?"): \(body)")
                } else if item.fields.contains(where: { $0.0 == "sealed" }) {
                    sealed += 1
                }
            }
            if !lines.isEmpty {
                record.comment = lines.joined(separator: "\n")
                annotated += 1
                opened += lines.count
            }
            if let error = writer.write(record) { throw CLIError("cannot write \(output): \(error)") }
        }
        if let error = writer.close() { throw CLIError("cannot write \(output): \(error)") }
        print(
            "wrote \(capture.records.count) records to \(output): \(opened) sealed bodies opened in \(annotated) packets"
                + (sealed > 0 ? ", \(sealed) left sealed (no key given for them)" : ""))
    }
}
