import ArgumentParser
import Foundation
import Peerlog
import PeerlogEncoding
import PeerlogModel

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Write everything this replica holds of a group to a file (JSON lines).",
        discussion:
            "The file is JSON lines with every receipt and envelope as signed bytes: carry it to another device and `peerlog import` it there. Written in constant memory, whole or not at all; an existing file is never overwritten. A progress bar goes to stderr when it is a terminal."
    )
    @OptionGroup var home: HomeOptions
    @OptionGroup var group: GroupArgument
    @Argument(help: "The file to create.") var file: String

    func run() async throws {
        // Checked before opening too, so that this is the error whatever else is wrong.
        if FileIO.exists(file) { throw CLIError("\(file) already exists; refusing to overwrite it") }
        let (peerlog, id) = try await home.openForReading(group)
        let bar = TransferProgressBar.onTerminal()
        defer { bar?.clear() }
        let counts = try await peerlog.export(group: id, to: file, progress: bar?.report)
        bar?.clear()
        print("Exported \(counts.receipts) receipts and \(counts.envelopes) envelopes of \(id) to \(file)")
    }
}

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract: "Verify and apply an export file from another replica.",
        discussion: """
            Two passes in constant memory: every line is checked first, and a malformed or incomplete file is \
            refused as a whole (exit status 1, nothing written); then signatures are verified and the items applied. \
            Exit status 0: every item was taken (stored, held already, queued, kept as evidence, or committed with \
            no effect by the group rules). Exit status 2: some were refused (a signature that fails, an author \
            revoked here, an envelope not from the sequencer, …) or ignored (the group is deleted here); the rest \
            is imported and the counts printed. Importing the same file twice changes nothing. FILE must be a \
            regular file (not a pipe: it is read twice). A progress bar goes to stderr when it is a terminal.
            """
    )
    @OptionGroup var home: HomeOptions
    @Argument(help: "The export file.") var file: String
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let peerlog = try await home.open()
        let bar = TransferProgressBar.onTerminal()
        defer { bar?.clear() }
        let report = try await peerlog.import(from: file, progress: bar?.report)
        bar?.clear()
        let counts: [(String, Int)] = [
            ("receipts", report.receipts), ("envelopes", report.envelopes), ("stored", report.stored),
            ("duplicates", report.duplicates), ("committed", report.committed),
            ("rule_rejected", report.ruleRejected), ("queued", report.queued),
            ("equivocations", report.equivocations), ("ignored", report.ignored), ("refused", report.refused),
            ("invalid", report.invalid), ("blobs", report.blobs),
        ]
        if output.json {
            let refusals = JSON.array(
                report.refusals.map { .object([("cid", .string($0.cid.string)), ("reason", .string($0.reason))]) })
            print(
                JSON.object(
                    counts.map { ($0.0, JSON.int($0.1)) } + [
                        ("taken", .bool(report.everythingTaken)), ("refusals", refusals),
                        ("blob_refusals", .array(report.blobRefusals.map(JSON.string))),
                    ]
                ).serialized(pretty: true)
            )
        } else {
            printRows(counts.map { ($0.0.replacingOccurrences(of: "_", with: "-"), String($0.1)) })
            for r in report.refusals { print("refused \(r.cid): \(r.reason)") }
            for r in report.blobRefusals { print("refused \(r)") }
            if report.refused > report.refusals.count + report.blobRefusals.count {
                print(
                    "… and \(report.refused - report.refusals.count - report.blobRefusals.count) more refused (failed signatures: peerlog dead-letters)"
                )
            }
        }
        if !report.everythingTaken {
            fflushStdout()
            FileHandle.standardError.write(
                Data(
                    "peerlog: import: \(report.refused) refused and \(report.ignored) ignored of \(report.receipts + report.envelopes) items; the rest was imported\n"
                        .utf8))
            throw ExitCode(2)
        }
    }
}

struct DeadLetters: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "dead-letters",
        abstract:
            "List receipts and envelopes given up on, and receipts refused as invalid (forgeries), with the reason.",
        discussion: """
            Kind `receipt`/`envelope`: given up on after retries (their reason says why). Kind `invalid`: a receipt \
            whose signature or certificate does not verify, with the author and identity it claims and the peer \
            that sent it (`-` when imported from a file); the newest 1,000 are listed.
            """
    )
    @OptionGroup var home: HomeOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let peerlog = try await home.openForReading()
        let items = try await peerlog.deadLetters()
        let invalid = try await peerlog.invalidReceipts()
        if output.json {
            let dead: [JSON] = items.map { item in
                .object([
                    ("kind", .string(item.kind)), ("group", .string(item.group.string)),
                    ("cid", .string(item.cid.string)),
                    ("retries", .int(item.retries)), ("reason", .string(item.reason)),
                    ("first_seen_ms", .int(item.firstSeenAt)), ("last_attempt_ms", .int(item.lastAttemptAt)),
                ])
            }
            let forged: [JSON] = invalid.map { r in
                .object([
                    ("kind", .string("invalid")), ("group", .string(r.group.string)), ("cid", .string(r.cid.string)),
                    ("author", r.author.map { .string($0.string) } ?? .null),
                    ("identity", r.identity.map { .string($0.string) } ?? .null),
                    ("peer", r.peer.map { .string($0.string) } ?? .null), ("reason", .string(r.reason)),
                    ("at_ms", .int(r.at)),
                ])
            }
            print(JSON.array(dead + forged).serialized(pretty: true))
            return
        }
        if items.isEmpty && invalid.isEmpty { print("No dead letters.") }
        if !items.isEmpty {
            printTable(
                [["KIND", "GROUP", "CID", "RETRIES", "LAST ATTEMPT", "REASON"]]
                    + items.map { item in
                        [
                            item.kind, item.group.string, item.cid.string, String(item.retries),
                            formatMillis(item.lastAttemptAt), item.reason,
                        ]
                    })
        }
        if !invalid.isEmpty {
            if !items.isEmpty { print("") }
            printTable(
                [["KIND", "GROUP", "CID", "AUTHOR", "IDENTITY", "FROM PEER", "WHEN", "REASON"]]
                    + invalid.map { r in
                        [
                            "invalid", r.group.string, r.cid.string, r.author?.string ?? "?", r.identity?.string ?? "?",
                            r.peer?.string ?? "-", formatMillis(r.at), r.reason,
                        ]
                    })
        }
    }
}
