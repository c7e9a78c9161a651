import ArgumentParser
import Foundation
import PeerlogCapture
import PeerlogCaptureTools
import PeerlogChannel
import PeerlogCrypto
import PeerlogEncoding
import PeerlogModel
import PeerlogNode

/// `peerlog replay FILE --into HOME | --to HOST:PORT`.
struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay a capture: offline into a fresh home (prints state hashes), or live to a running peer.",
        discussion: """
            --into HOME feeds the connection's recorded inbound messages into a new sync session and replica in HOME \
            (created if needed; it must hold no groups yet), with the clock set to each record's time: the same capture \
            always gives the same state hashes.
            --to HOST:PORT opens a Noise connection as the device of --home and re-sends the recorded receipts and \
            envelopes; the peer accepts or refuses them as it did the first time (their authors signed them).
            """
    )

    @Argument(help: "A capture file made by `daemon --capture` or `capture start` (with bodies).") var file: String
    @Option(help: ArgumentHelp("Replay offline into this home.", valueName: "dir")) var into: String?
    @Option(help: ArgumentHelp("Replay live to this peer.", valueName: "host:port")) var to: String?
    @Option(
        help: ArgumentHelp(
            "The connection to replay (default: the first that received receipts or envelopes).", valueName: "id"))
    var connection: UInt64?
    @Option(
        help: ArgumentHelp(
            "With --to: pace batches at this multiple of the recorded speed; 0 sends as fast as the peer's credit allows.",
            valueName: "x")) var speed: Double = 1
    @Option(help: ArgumentHelp("With --to: the peer's network id.", valueName: "id")) var network: String?
    @Option(
        help: ArgumentHelp(
            "With --to: seconds to wait for the handshake, the peer's acceptance and its acknowledgements.",
            valueName: "s")) var timeout: Double = 30
    @OptionGroup var home: HomeOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard (into == nil) != (to == nil) else {
            throw ValidationError("give exactly one of --into HOME and --to HOST:PORT")
        }
        guard speed >= 0, speed.isFinite else { throw ValidationError("--speed must be 0 or more") }
    }

    func run() throws {
        let capture: CaptureFile
        do { capture = try CaptureFile(path: file) } catch let e as CaptureError { throw CLIError("\(e)") }
        if let into { try offline(capture, home: into) } else if let to { try live(capture, to: to) }
    }

    func offline(_ capture: CaptureFile, home dir: String) throws {
        let result: OfflineReplay.Result
        do { result = try OfflineReplay.run(capture: capture, connection: connection, intoHome: dir) } catch let e
            as CaptureError
        {
            throw CLIError("\(e)")
        }
        if output.json {
            print(
                JSON.object([
                    ("connection", .int(result.connection)), ("peer", .string(result.peer.string)),
                    ("messages", .int(result.messagesFed)), ("items", .int(result.itemsFed)),
                    ("session_errors", .array(result.sessionErrors.map { .string($0) })),
                    (
                        "groups",
                        .array(
                            result.groups.map { g in
                                .object([
                                    ("group", .string(g.group.string)), ("committed_seq", .int(g.committed)),
                                    ("tentative_count", .int(g.tentative)),
                                    ("committed", .string(hexString(g.committedHash))),
                                    ("tentative", .string(hexString(g.tentativeHash))),
                                ])
                            })
                    ),
                ]).serialized(pretty: true))
            return
        }
        print(
            "replayed connection \(result.connection) from device \(result.peer): \(result.messagesFed) messages, \(result.itemsFed) items"
        )
        for e in result.sessionErrors { print("session error: \(e)") }
        for g in result.groups {
            print("group \(g.group) seq \(g.committed), \(g.tentative) tentative")
            print("  committed \(hexString(g.committedHash))")
            print("  tentative \(hexString(g.tentativeHash))")
        }
    }

    func live(_ capture: CaptureFile, to target: String) throws {
        let address = try PeerAddress(parsing: target)
        let replay = try LiveReplayRun(capture: capture, connection: connection)
        var configuration = ChannelConfiguration()
        if let network { configuration.networkID = network }
        let result = try replay.run(
            host: address.host, port: address.port, device: try home.loadDevice(), configuration: configuration,
            speed: speed, timeout: timeout
        ) { peer in
            printError(
                "replaying \(replay.batches) batches of connection \(replay.connection) to device \(peer) at \(target)")
        }
        if output.json {
            print(
                JSON.object([
                    ("batches", .int(result.batches)), ("items", .int(result.items)),
                    ("peer", .string(result.peer.string)),
                ]).serialized(pretty: true))
        } else {
            print("sent \(result.batches) batches (\(result.items) items) to device \(result.peer); all acknowledged")
        }
    }
}
