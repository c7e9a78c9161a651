import ArgumentParser
import PeerlogEncoding
import PeerlogModel

struct ReceiptCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "receipt",
        abstract: "Low-level receipt tools (no store involved).",
        subcommands: [Create.self]
    )

    struct Create: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create",
            abstract:
                "Sign a receipt with this device's key and write it to a file. Counters and parents are yours to choose."
        )

        @OptionGroup var home: HomeOptions
        @Option(help: "Group id (default: a new random one).") var group: String?
        @Option(help: "Receipt type, e.g. app.note.") var type: String
        @Option(help: "Author counter (1, 2, 3 … per author per group).") var counter: UInt64 = 1
        @Option(
            help:
                "Body as JSON (integers, strings, arrays, objects, true/false/null; {\"$bytes\": hex}; {\"$cid\": cid})."
        ) var body: String = "null"
        @Option(name: .customLong("parent"), help: "A parent CID (repeatable).") var parents: [String] = []
        @Option(help: "Output file.") var out: String

        func run() throws {
            let device = try home.loadDevice()
            let groupID = try group.map { try GroupID(string: $0) } ?? GroupID.random()
            let bodyValue: CBOR
            do { bodyValue = try CBOR(json: try JSON.parse(body), allowFloats: false) } catch {
                throw CLIError("--body: \(error)")
            }
            var parentCIDs = [CID]()
            for p in parents {
                do { parentCIDs.append(try CID(string: p)) } catch { throw CLIError("--parent \(p): \(error)") }
            }
            var clock = HybridLogicalClock()
            let draft = Receipt.Draft(
                group: groupID, type: type, counter: counter, parents: parentCIDs,
                hlc: clock.now(wallMillis: WallClock.nowMillis()), body: bodyValue)
            let receipt = try device.sign(draft)
            try FileIO.writeNew(receipt.encoded, to: out, mode: 0o644)
            print(receipt.cid)
        }
    }
}
