import ArgumentParser
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
#if canImport(Glibc)
import Glibc
#endif

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check the store: SQLite integrity, and for every group that the materialized state equals a replay of the stored log and the maintained tentative view a fold of the tentative receipts.",
        discussion: "Exit status: 0 when everything is consistent, 2 when something is not."
    )

    @OptionGroup var home: HomeOptions
    @Flag(help: "Print JSON.") var json = false

    func run() throws {
        let node = try Node(home)
        let integrity = try node.replica.store.integrityCheck()
        var rows = [JSON]()
        var consistent = integrity == "ok"
        for group in try node.replica.groupIDs() {
            let materialized = try node.replica.stateHash(of: group, view: .committed)
            let replayed = try node.replica.replayedStateHash(of: group)
            // The maintained tentative view against a fold of the tentative receipts from scratch.
            let tentative: String
            switch try node.replica.checkTentativeOverlay(of: group) {
            case .matches: tentative = "matches"
            case .notMaintained: tentative = "not maintained"
            case .mismatch(let what):
                tentative = "MISMATCH: " + what
                consistent = false
            }
            consistent = consistent && materialized == replayed
            let seq = try node.replica.vector(of: group).committed
            rows.append(.object([
                ("group", .string(group.string)), ("committed_seq", .int(seq)),
                ("materialized", .string(hexString(materialized))), ("replayed", .string(hexString(replayed))), ("match", .bool(materialized == replayed)),
                ("tentative", .string(tentative)),
            ]))
            if !json {
                let committed = materialized == replayed ? "ok" : "MISMATCH: materialized state differs from a replay of the log"
                print("\(group)  seq \(seq)  \(committed)  tentative view: \(tentative == "matches" ? "ok" : tentative)")
            }
        }
        if json {
            print(JSON.object([("integrity", .string(integrity)), ("groups", .array(rows)), ("consistent", .bool(consistent))]).serialized(pretty: true))
        } else {
            print("integrity: \(integrity)")
        }
        if !consistent { throw ExitCode(2) }
    }
}

/// Commands for tests and debugging; not shown in help.
struct Debug: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Testing aids.", shouldDisplay: false, subcommands: [AppendLoop.self])

    struct AppendLoop: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Append entity puts in a loop, printing `ok <cid>` (unbuffered) after each returns.")
        @OptionGroup var home: HomeOptions
        @Argument var group: String
        @Option(help: "Stop after this many appends (default: until killed).") var count: Int = .max

        func run() throws {
            let node = try Node(home)
            let id = try node.group(group)
            var i = 0
            while i < count {
                let r = try node.replica.append(.entityPut(key: "k\(i % 50)", value: .int(Int64(i))), to: id)
                var line = Array("ok \(r.receipt.cid)\n".utf8)
                _ = line.withUnsafeMutableBytes { Glibc.write(1, $0.baseAddress, $0.count) }
                i += 1
            }
        }
    }
}
