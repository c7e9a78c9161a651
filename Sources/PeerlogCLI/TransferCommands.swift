import ArgumentParser
import Peerlog
import PeerlogEncoding
import PeerlogModel

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write everything this replica holds of a group to a file (JSON lines).",
        discussion:
            "The file is JSON lines with every receipt and envelope as signed bytes: carry it to another device and `peerlog import` it there. An existing file is never overwritten."
    )
    @OptionGroup var home: HomeOptions
    @OptionGroup var group: GroupArgument
    @Argument(help: "The file to create.") var file: String

    func run() async throws {
        // Checked before opening too, so that this is the error whatever else is wrong.
        if FileIO.exists(file) { throw CLIError("\(file) already exists; refusing to overwrite it") }
        let peerlog = try await home.openForReading()
        let id = try await group.resolve(in: peerlog)
        let counts = try await peerlog.export(group: id, to: file)
        print("Exported \(counts.receipts) receipts and \(counts.envelopes) envelopes of \(id) to \(file)")
    }
}

struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Verify and apply an export file from another replica.",
        discussion:
            "A malformed file is refused as a whole (exit status 1, nothing written). Importing the same file twice changes nothing."
    )
    @OptionGroup var home: HomeOptions
    @Argument(help: "The export file.") var file: String
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let report = try await home.open().import(from: file)
        let counts: [(String, Int)] = [
            ("stored", report.stored), ("duplicates", report.duplicates), ("committed", report.committed),
            ("queued", report.queued), ("ignored", report.ignored), ("rejected", report.rejected.count),
        ]
        if output.json {
            let rejected = JSON.array(
                report.rejected.map { .object([("cid", .string($0.cid.string)), ("reason", .string($0.reason))]) })
            print(
                JSON.object(counts.map { ($0.0, JSON.int($0.1)) } + [("rejections", rejected)]).serialized(pretty: true)
            )
        } else {
            printRows(counts.map { ($0.0, String($0.1)) })
            for r in report.rejected { print("rejected \(r.cid): \(r.reason)") }
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
