import ArgumentParser
import Peerlog
import PeerlogCapture
import PeerlogCaptureTools
import PeerlogModel

extension GroupCommand {
    /// `group keys [GROUP] [--append FILE]`: the epoch keys this device holds, as key-log lines.
    struct Keys: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "keys",
            abstract: "Print the epoch keys this device holds, for the tools that show sealed bodies.",
            discussion: """
                One line per key (docs/PROTOCOL.md §17.6): \(EpochKeyLog.label) GROUP KEY. Give the file to \
                `capture show --keylog`, `capture annotate --keylog` or `inspect --keylog` to see what encrypted \
                groups' receipts hold; it may be the same file as a Noise key log. Whoever holds these lines reads \
                the groups: keep them as you would the home.
                """)
        @OptionGroup var home: HomeOptions
        @Argument(help: "Only this group (its id, or its name if no other group has it); default every group.")
        var group: String?
        @Option(
            help: ArgumentHelp(
                "Append the lines to this file (created with mode 0600) instead of printing them.", valueName: "file"))
        var append: String?

        func run() async throws {
            let peerlog = try await home.openForReading()
            var id: GroupID?
            if let group { id = try await peerlog.groupID(group) }
            let lines = try await peerlog.heldEpochKeys(of: id).map { EpochKeyLog.line(group: $0.group, key: $0.key) }
            guard let append else {
                for line in lines { print(line) }
                if lines.isEmpty { printError("no epoch keys held\(id.map { " for group \($0)" } ?? "")") }
                return
            }
            if let problem = KeyLogFile.append(lines: lines, to: append) { throw CLIError(problem) }
            printError("appended \(lines.count) epoch key\(lines.count == 1 ? "" : "s") to \(append)")
        }
    }
}

/// `--keylog FILE` of the tools that show bodies: epoch keys to open sealed bodies with.
struct EpochKeyLogOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Open sealed bodies with the epoch keys in this file (\(EpochKeyLog.label) lines, from `peerlog group keys`).",
            valueName: "file"))
    var keylog: String?

    /// The keys given; none without `--keylog`.
    func load() throws -> EpochKeyLog {
        guard let keylog else { return EpochKeyLog() }
        let text = String(decoding: try FileIO.read(keylog, maxBytes: 16 << 20), as: UTF8.self)
        let log: EpochKeyLog
        do { log = try EpochKeyLog.parse(text) } catch { throw CLIError("\(keylog): \(error)") }
        guard log.count > 0 else {
            throw CLIError("\(keylog) has no \(EpochKeyLog.label) lines (write them with `peerlog group keys`)")
        }
        return log
    }
}
