import ArgumentParser
import Foundation
import PeerlogCapture
import PeerlogCaptureTools
import PeerlogEncoding
import PeerlogModel

/// `peerlog capture show FILE`: a transcript, one line per record.
struct CaptureShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract:
            "Print a capture as a transcript: one line per message (--verbose: with the whole message in CBOR diagnostic notation).",
        discussion:
            "Columns: record number, seconds since the first record, connection, direction (→ sent, ← received, + opened, x closed), peer device, message type, group, details."
    )

    @Argument(help: "A capture file (pcapng written by `daemon --capture`, `capture start` or `capture decrypt`).")
    var file: String
    @Flag(
        name: .shortAndLong, help: "Print each message whole, items and payloads decoded, in CBOR diagnostic notation.")
    var verbose = false
    @Flag(help: "One JSON object per line, for scripts.") var json = false
    @Option(help: ArgumentHelp("Only this peer (device id or a prefix of it).", valueName: "device")) var peer: String?
    @Option(help: ArgumentHelp("Only messages about this group (id or a prefix).", valueName: "group")) var group:
        String?
    @Option(
        help: ArgumentHelp(
            "Only these message types (repeatable or comma-separated): hello, vector, receipts, envelopes, commits, request, credit, caught_up, done, error, opened, closed.",
            valueName: "type")) var type: [String] = []
    @Option(help: ArgumentHelp("Only this connection.", valueName: "id")) var connection: UInt64?
    @OptionGroup var keys: EpochKeyLogOption

    func run() throws {
        let capture: CaptureFile
        do { capture = try CaptureFile(path: file) } catch let e as CaptureError { throw CLIError("\(e)") }
        let keyLog = try keys.load()
        let start = capture.records.first?.time ?? 0
        let filter = RecordFilter(connection: connection, types: type, peer: peer, group: group)
        var shown = 0
        for (i, record) in capture.records.enumerated() {
            let view = RecordView(index: i + 1, record: record, keys: keyLog)
            guard filter.matches(view) else { continue }
            shown += 1
            if json {
                print(jsonLine(view, start: start).serialized())
            } else {
                print(line(view, start: start))
                if verbose { print(indent(view.expanded?.diagnostic(pretty: true) ?? "(undecodable)")) }
            }
        }
        if !json, shown == 0 { printError("no records match (the capture has \(capture.records.count))") }
    }

    func line(_ v: RecordView, start: UInt64) -> String {
        let seconds = Double(v.record.time &- start) / 1_000_000
        let arrow =
            switch v.record.kind {
            case .opened: "+"
            case .closed: "x"
            case .message: v.record.direction == .outbound ? "→" : "←"
            }
        var text = pad(String(v.index), 5, right: true) + " " + pad(String(format: "%.3f", seconds), 9, right: true)
        text += " " + pad("c\(v.record.connection)", 4) + " \(arrow) \(v.record.peer.short) " + pad(v.type, 9)
        if let g = v.group { text += " group \(g.string.prefix(12))…" }
        if !v.detail.isEmpty { text += " " + v.detail }
        if !v.items.isEmpty, !verbose {
            var counts = [String: Int]()
            for item in v.items {
                counts[item.fields.first(where: { $0.0 == "type" })?.1 ?? item.kind.rawValue, default: 0] += 1
            }
            text += ": " + counts.sorted { $0.key < $1.key }.map { "\($0.key)×\($0.value)" }.joined(separator: " ")
        }
        return text
    }

    func jsonLine(_ v: RecordView, start: UInt64) -> JSON {
        var entries: [(String, JSON)] = [
            ("index", .int(v.index)), ("time_us", .int(v.record.time)), ("connection", .int(v.record.connection)),
            ("kind", .string("\(v.record.kind)")),
            ("direction", .string(v.record.direction == .inbound ? "in" : "out")),
            ("local", .string(v.record.local.string)), ("peer", .string(v.record.peer.string)),
            ("type", .string(v.type)),
            ("group", v.group.map { .string($0.string) } ?? .null), ("detail", .string(v.detail)),
            ("bodies_omitted", .bool(v.record.bodiesOmitted)),
        ]
        entries.append(
            (
                "items",
                .array(
                    v.items.map { item in
                        var fields: [(String, JSON)] = [
                            ("kind", .string(item.kind.rawValue)),
                            ("cid", item.cid.map { .string($0.string) } ?? .null),
                        ]
                        fields += item.fields.map { ($0.0, .string($0.1)) }
                        if let problem = item.problem { fields.append(("problem", .string(problem))) }
                        return .object(fields)
                    })
            ))
        entries.append(("message", v.expanded?.json ?? .null))
        if let problem = v.problem { entries.append(("problem", .string(problem))) }
        return .object(entries)
    }

    func pad(_ s: String, _ width: Int, right: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(0, width - s.count))
        return right ? fill + s : s + fill
    }

    func indent(_ text: String) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { "      " + $0 }.joined(separator: "\n")
    }
}
