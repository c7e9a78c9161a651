import ArgumentParser
import Peerlog
import PeerlogCrypto
import PeerlogEncoding

#if canImport(Glibc)
import Glibc
#endif

struct Check: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract:
            "Check the store: SQLite integrity, the parent links against what the stored receipts name, the row numbers receipts and envelopes name each other by, and for every group that the materialized state equals a replay of the stored log and the maintained tentative view a fold of the tentative receipts, and the kept counts of receipts waiting for a seq a count of them.",
        discussion: "Exit status: 0 when everything is consistent, 2 when something is not."
    )

    @OptionGroup var home: HomeOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        // As found: opening normally would rebuild views an older binary left stale.
        let report = try await home.openForReading(rebuildViews: false).check()
        var rows = [JSON]()
        for g in report.groups {
            let tentative =
                switch g.tentative {
                case .matches: "matches"
                case .notMaintained: "not maintained"
                case .mismatch(let what): "MISMATCH: " + what
                }
            rows.append(
                .object([
                    ("group", .string(g.group.string)), ("committed_seq", .int(g.committedSeq)),
                    ("materialized", .string(hexString(g.materialized))), ("replayed", .string(hexString(g.replayed))),
                    ("match", .bool(g.committedMatches)),
                    ("tentative", .string(tentative)),
                    ("waiting_counts", .string(g.waitingCountMismatch.map { "MISMATCH: " + $0 } ?? "matches")),
                ]))
            if !output.json {
                let committed =
                    g.committedMatches ? "ok" : "MISMATCH: materialized state differs from a replay of the log"
                let waiting = g.waitingCountMismatch.map { "MISMATCH: " + $0 } ?? "ok"
                print(
                    "\(g.group)  seq \(g.committedSeq)  \(committed)  tentative view: \(tentative == "matches" ? "ok" : tentative)  waiting counts: \(waiting)"
                )
            }
        }
        if output.json {
            print(
                JSON.object([
                    ("integrity", .string(report.integrity)),
                    ("parent_links", .string(report.parentLinkMismatch.map { "MISMATCH: " + $0 } ?? "matches")),
                    ("row_references", .string(report.rowReferenceMismatch.map { "MISMATCH: " + $0 } ?? "matches")),
                    ("groups", .array(rows)),
                    ("consistent", .bool(report.isConsistent)),
                ]).serialized(pretty: true))
        } else {
            print("integrity: \(report.integrity)")
            print("parent links: \(report.parentLinkMismatch.map { "MISMATCH: " + $0 } ?? "ok")")
            print("row references: \(report.rowReferenceMismatch.map { "MISMATCH: " + $0 } ?? "ok")")
        }
        if !report.isConsistent { throw ExitCode(2) }
    }
}

/// Commands for tests and debugging; not shown in help.
struct Debug: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "debug",
        abstract: "Testing aids.", shouldDisplay: false, subcommands: [AppendLoop.self])

    struct AppendLoop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "append-loop",
            abstract: "Append entity puts in a loop, printing `ok <cid>` (unbuffered) after each returns.")
        @OptionGroup var home: HomeOptions
        @Argument var group: String
        @Option(help: "Stop after this many appends (default: until killed).") var count: Int = .max

        func run() async throws {
            let peerlog = try await home.open()
            let id = try await peerlog.groupID(group)
            var i = 0
            while i < count {
                let r = try await peerlog.put("k\(i % 50)", cbor: .int(Int64(i)), in: id)
                var line = Array("ok \(r.cid)\n".utf8)
                _ = line.withUnsafeMutableBytes { Glibc.write(1, $0.baseAddress, $0.count) }
                i += 1
            }
        }
    }
}
