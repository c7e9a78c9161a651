import ArgumentParser
import Foundation
import PeerlogCapture
import PeerlogCaptureTools

/// `peerlog capture decrypt RAW --keylog FILE --output OUT`.
struct CaptureDecrypt: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decrypt",
        abstract: "Turn a raw TCP capture (tcpdump, tshark) plus a key log into a Peerlog capture.",
        discussion: """
            The key log is written by daemons started with \(KeyLogEntry.environmentVariable)=FILE (off by default). \
            It holds every logged connection's transport keys: anyone with it can read those connections. Delete it when done.
            """
    )

    @Argument(help: "A pcap or pcapng file of TCP traffic.") var raw: String
    @Option(help: ArgumentHelp("The key log.", valueName: "file")) var keylog: String
    @Option(name: .shortAndLong, help: ArgumentHelp("The Peerlog capture to write.", valueName: "file")) var output:
        String
    @Option(help: ArgumentHelp("Whose view the records take: initiator (the dialer) or responder.", valueName: "side"))
    var side: String = "initiator"
    @Option(
        help: ArgumentHelp(
            "Transport frames between rekeys, as configured on the peers (default 4096).", valueName: "n"))
    var rekeyInterval: UInt64 = 4096

    func run() throws {
        guard let side = RawDecrypt.Side(rawValue: side) else {
            throw ValidationError("--side must be initiator or responder")
        }
        guard let keyText = FileManager.default.contents(atPath: keylog) else {
            throw CLIError("cannot read key log \(keylog)")
        }
        guard let rawBytes = FileManager.default.contents(atPath: raw) else { throw CLIError("cannot read \(raw)") }
        let decrypted: RawDecrypt
        do {
            let entries = try KeyLogEntry.parse(String(decoding: keyText, as: UTF8.self))
            guard !entries.isEmpty else { throw CLIError("\(keylog) has no \(KeyLogEntry.label) lines") }
            decrypted = try RawDecrypt(
                file: PacketFile(bytes: Array(rawBytes)), keyLog: entries, side: side, rekeyInterval: rekeyInterval)
        } catch var e as CaptureError {
            e.path = e.path ?? raw
            throw CLIError("\(e)")
        }
        guard !decrypted.connections.isEmpty else {
            throw CLIError("no Peerlog connections found in \(raw) (is it a capture of the peers' TCP port?)")
        }
        let writer = try CaptureWriter(path: output)
        for r in decrypted.records {
            if let error = writer.write(r) { throw CLIError("cannot write \(output): \(error)") }
        }
        writer.close()
        for c in decrypted.connections {
            var line = "connection \(c.id): \(c.initiator) → \(c.responder): "
            if let e = c.entry {
                line += "\(c.messages) records (initiator \(e.initiator.short), responder \(e.responder.short))"
            } else {
                line += "skipped"
            }
            if let p = c.problem { line += "; \(p)" }
            print(line)
        }
        print("wrote \(decrypted.records.count) records to \(output)")
    }
}
