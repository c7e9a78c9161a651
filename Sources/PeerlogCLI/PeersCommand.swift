import ArgumentParser
import Foundation
import Peerlog

/// `peerlog peers`: who the running daemon knows of and how.
struct Peers: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers",
        abstract: "List the daemon's peers: discovered on the LAN, static (--peer) and inbound, with their state.")

    @OptionGroup var home: HomeOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        let status = try PeerlogDaemon(home: home.path).status()
        if output.json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            print(String(decoding: try encoder.encode(status.peers), as: UTF8.self))
            return
        }
        if !status.discovery {
            print("LAN discovery: off (--no-discovery)")
        } else if let why = status.discoveryUnavailable {
            print("LAN discovery: unavailable (\(why))")
        } else {
            print("LAN discovery: on")
        }
        if status.peers.isEmpty { print("no peers yet") }
        for p in status.peers {
            var line =
                "\(p.source.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(p.state.rawValue.padding(toLength: 11, withPad: " ", startingAt: 0)) \(p.address)"
            if let d = p.device { line += "  \(d)" + (p.name.map { " (\($0))" } ?? "") }
            if let e = p.lastError { line += "  — \(e)" }
            print(line)
        }
    }
}
