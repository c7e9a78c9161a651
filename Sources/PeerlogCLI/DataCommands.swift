import ArgumentParser
import Peerlog
import PeerlogCrypto
import PeerlogEncoding

struct Get: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Print an entity's value (strings as they are, anything else as JSON).",
        discussion: """
            Exit status 1 when the key has no value in the view. A blob's value is written with --out FILE (- for \
            standard output), fetched first when it is not here yet (waiting up to --wait seconds for the value to \
            arrive and the daemon to fetch it; progress on a terminal); without --out its reference is printed as JSON.
            """
    )
    @OptionGroup var home: HomeOptions
    @OptionGroup var group: GroupArgument
    @Argument(help: "The entity key.") var key: String
    @OptionGroup var view: ViewOptions
    @Flag(help: "Print JSON: key, value, cid, status, seq.") var json = false
    @Option(help: ArgumentHelp("Write a blob's value to this file (- for standard output).", valueName: "file"))
    var out: String?
    @Option(help: "With --out: seconds to wait for a blob not here yet.") var wait = 600

    func run() async throws {
        if let out { return try await writeBlob(to: out) }
        let (peerlog, id) = try await home.openForReading(group)
        guard let entity = try await peerlog.entry(key, in: id, view: view.view) else {
            throw CLIError("no value for \"\(key)\" in the \(view.view.rawValue) view of \(id)")
        }
        if json {
            print(
                JSON.object(
                    [("key", .string(key)), ("value", entity.value.json), ("cid", .string(entity.cid.string))]
                        + statusJSONFields(seq: entity.seq)
                ).serialized(pretty: true))
        } else if case .text(let s) = entity.value {
            print(s)
        } else {
            print(entity.value.json.serialized())
        }
    }
}

extension Get {
    func writeBlob(to path: String) async throws {
        let (peerlog, id) = try await home.open(group)
        // The value's receipt may still be on its way: wait for it as for the bytes.
        let deadline = ContinuousClock.now + .seconds(wait)
        while try await peerlog.entry(key, in: id, view: view.view) == nil && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
        }
        guard let blob = try await peerlog.blob(key, in: id, view: view.view) else {
            guard try await peerlog.entry(key, in: id, view: view.view) != nil else {
                throw CLIError("no value for \"\(key)\" in the \(view.view.rawValue) view of \(id)")
            }
            throw CLIError("the value of \"\(key)\" is not a blob: --out writes blobs; print it without --out")
        }
        if !blob.isHeld { _ = try await BlobFetch.fetch(key, in: id, peerlog: peerlog, wait: wait) }
        try await peerlog.readBlob(key, in: id, to: path, view: view.view)
    }
}

struct DeleteCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete an entity from a group.")
    @OptionGroup var home: HomeOptions
    @OptionGroup var group: GroupArgument
    @Argument(help: "The entity key.") var key: String
    @OptionGroup var conditions: ConditionOptions
    @Flag(help: "Parse --if-value as JSON.") var jsonValue = false
    @OptionGroup var wait: WaitOptions
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let condition = try conditions.condition(json: jsonValue)
        let (peerlog, id) = try await home.open(group)
        guard let condition else {
            let result = try await peerlog.delete(key, in: id)
            if wait.wait {
                return try await reportOutcome(
                    result, peerlog: peerlog, group: id, summary: "Deleted \"\(key)\"", wait: wait, json: output.json)
            }
            return printAppend(result, group: id, summary: "Deleted \"\(key)\"", json: output.json)
        }
        let result = try await peerlog.delete(key, in: id, if: condition)
        try await reportOutcome(
            result, peerlog: peerlog, group: id, summary: "Deleted \"\(key)\" if \(condition.text)", wait: wait,
            json: output.json)
    }
}

struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "Print a group's log: committed receipts in seq order, then tentative ones.",
        discussion:
            "Columns: seq (~ when tentative), C (committed) or T (tentative), type, author device (short), author counter, receipt CID, and REJECTED: reason for a receipt without effect."
    )
    @OptionGroup var home: HomeOptions
    @OptionGroup var group: GroupArgument
    @OptionGroup var view: ViewOptions
    @Flag(help: "Print a JSON array.") var json = false

    func run() async throws {
        let peerlog = try await home.openForReading()
        let items = try await peerlog.log(of: try await group.resolve(in: peerlog), view: view.view)
        if json {
            print(JSON.array(items.map(Self.json)).serialized(pretty: true))
            return
        }
        printTable(
            items.map { r in
                let (seq, mark) = r.seq.map { (String($0), "C") } ?? ("~", "T")
                return [seq, mark, r.type, r.author.short, String(r.counter), r.cid.string]
                    + (r.rejected.map { ["REJECTED: " + $0] } ?? [])
            })
    }

    static func json(_ r: PeerlogLogItem) -> JSON {
        .object(
            statusJSONFields(seq: r.seq) + [
                ("type", .string(r.type)), ("author", .string(r.author.string)),
                ("identity", .string(r.identity.string)),
                ("counter", .int(r.counter)), ("cid", .string(r.cid.string)),
                ("hlc_time", .string(formatMillis(r.time))),
                ("body", r.body.json), ("rejected", r.rejected.map { .string($0) } ?? .null),
            ] + (r.plaintext.map { [("plaintext", $0.json)] } ?? []))
    }
}

struct StateHash: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "state-hash",
        abstract:
            "Print the group's state hash in both views; replicas holding the same receipts print the same hashes."
    )
    @OptionGroup var home: HomeOptions
    @OptionGroup var group: GroupArgument
    @OptionGroup var output: OutputOptions

    func run() async throws {
        let (peerlog, id) = try await home.openForReading(group)
        let committed = hexString(try await peerlog.stateHash(of: id, view: .committed))
        let tentative = hexString(try await peerlog.stateHash(of: id, view: .tentative))
        if output.json {
            print(
                JSON.object([
                    ("group", .string(id.string)), ("committed", .string(committed)), ("tentative", .string(tentative)),
                ]).serialized(pretty: true))
        } else {
            print("committed \(committed)")
            print("tentative \(tentative)")
        }
    }
}
