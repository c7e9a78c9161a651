import ArgumentParser
import Foundation
import PeerlogCapture
import PeerlogChannel
import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogNode

/// `peerlog replay FILE --into HOME | --to HOST:PORT`.
struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
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
    @Option(help: ArgumentHelp("The connection to replay (default: the first that received receipts or envelopes).", valueName: "id")) var connection: UInt64?
    @Option(help: ArgumentHelp("With --to: pace batches at this multiple of the recorded speed; 0 sends as fast as the peer's credit allows.", valueName: "x")) var speed: Double = 1
    @Option(help: ArgumentHelp("With --to: the peer's network id.", valueName: "id")) var network: String?
    @Option(help: ArgumentHelp("With --to: seconds to wait for the handshake, the peer's acceptance and its acknowledgements.", valueName: "s")) var timeout: Double = 30
    @OptionGroup var home: HomeOptions
    @OptionGroup var output: OutputOptions

    func validate() throws {
        guard (into == nil) != (to == nil) else { throw ValidationError("give exactly one of --into HOME and --to HOST:PORT") }
        guard speed >= 0, speed.isFinite else { throw ValidationError("--speed must be 0 or more") }
    }

    func run() throws {
        let capture: CaptureFile
        do { capture = try CaptureFile(path: file) } catch let e as CaptureError { throw CLIError("\(e)") }
        if let into { try offline(capture, home: into) } else if let to { try live(capture, to: to) }
    }

    func offline(_ capture: CaptureFile, home dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let device: LocalDevice
        if FileManager.default.fileExists(atPath: LocalDevice.paths(home: dir).certificate) {
            device = try LocalDevice.load(home: dir)
        } else {
            device = try LocalDevice.generate(name: "replay", createdAt: WallClock.nowMillis())
            try device.save(home: dir)
        }
        let clock = ReplayClock()
        let replica = try Replica(path: dir + "/replica.sqlite", device: device, clock: { clock.now() })
        guard try replica.groupIDs().isEmpty else { throw CLIError("\(dir) already holds groups: replay into a fresh home") }
        let result: OfflineReplay.Result
        do { result = try OfflineReplay.run(capture: capture, connection: connection, into: replica, device: device, clock: clock) } catch let e as CaptureError {
            throw CLIError("\(e)")
        }
        if output.json {
            print(JSON.object([
                ("connection", .int(result.connection)), ("peer", .string(result.peer.string)),
                ("messages", .int(result.messagesFed)), ("items", .int(result.itemsFed)),
                ("session_errors", .array(result.sessionErrors.map { .string($0) })),
                ("groups", .array(result.groups.map { g in .object([
                    ("group", .string(g.group.string)), ("committed_seq", .int(g.committed)), ("tentative_count", .int(g.tentative)),
                    ("committed", .string(hexString(g.committedHash))), ("tentative", .string(hexString(g.tentativeHash))),
                ]) })),
            ]).serialized(pretty: true))
            return
        }
        print("replayed connection \(result.connection) from device \(result.peer): \(result.messagesFed) messages, \(result.itemsFed) items")
        for e in result.sessionErrors { print("session error: \(e)") }
        for g in result.groups {
            print("group \(g.group) seq \(g.committed), \(g.tentative) tentative")
            print("  committed \(hexString(g.committedHash))")
            print("  tentative \(hexString(g.tentativeHash))")
        }
    }

    func live(_ capture: CaptureFile, to target: String) throws {
        let address = try PeerAddress(parsing: target)
        let chosen: UInt64
        do { chosen = try OfflineReplay.connection(in: capture, requested: connection) } catch let e as CaptureError { throw CLIError("\(e)") }
        let driver: LiveReplayDriver
        do { driver = try LiveReplayDriver(capture: capture, connection: chosen) } catch let e as CaptureError { throw CLIError("\(e)") }
        var configuration = ChannelConfiguration()
        if let network { configuration.networkID = network }
        let link = try SecureLink(host: address.host, port: address.port, device: try home.loadDevice(), configuration: configuration, timeout: timeout)
        printError("replaying \(driver.batches.count) batches of connection \(chosen) to device \(link.peer!.device) at \(target)")
        for m in driver.start() { try link.send(m) }
        let started = Date()
        let firstTime = driver.batches[0].time
        var lastProgress = Date()
        while !driver.acknowledged {
            if let reason = link.closedReason { throw CLIError("the peer closed the connection after \(driver.sent) of \(driver.batches.count) batches: \(reason)") }
            // Pace: a batch is due `(t − t0) / speed` after the start.
            if !driver.done, speed > 0 {
                let due = started.addingTimeInterval(Double(driver.batches[driver.sent].time &- firstTime) / 1_000_000 / speed)
                if due > Date() { try link.pump(until: due); try handle(link, driver); continue }
            }
            if let messages = driver.next() {
                for m in messages { try link.send(m) }
                lastProgress = Date()
                continue
            }
            try link.pump(until: Date().addingTimeInterval(0.2))
            if try handle(link, driver) { lastProgress = Date() }
            if Date().timeIntervalSince(lastProgress) > timeout {
                let waiting = driver.unaccepted.isEmpty ? "credit or acknowledgements" : "acceptance of group \(driver.unaccepted.map(\.string).joined(separator: ", ")) (does the peer share it with this device?)"
                throw CLIError("no progress for \(timeout) s after \(driver.sent) of \(driver.batches.count) batches: waiting for \(waiting)")
            }
        }
        link.close(reason: "replay finished")
        _ = try? link.pump(until: Date().addingTimeInterval(0.2))
        if output.json {
            print(JSON.object([("batches", .int(driver.sent)), ("items", .int(driver.itemsSent)), ("peer", .string(link.peer!.device.string))]).serialized(pretty: true))
        } else {
            print("sent \(driver.sent) batches (\(driver.itemsSent) items) to device \(link.peer!.device); all acknowledged")
        }
    }

    /// Feeds what arrived to the driver and sends its replies; true if anything arrived.
    @discardableResult
    func handle(_ link: SecureLink, _ driver: LiveReplayDriver) throws -> Bool {
        let messages = link.take()
        for m in messages {
            do { for reply in try driver.receive(m) { try link.send(reply) } } catch let f as LiveReplayDriver.Failure { throw CLIError("\(f)") }
        }
        return !messages.isEmpty
    }
}
