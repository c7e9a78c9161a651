import Foundation
import Peerlog

#if canImport(Glibc)
import Glibc
#endif

/// `peerlog status --watch`: on a terminal, redraws in place with a progress bar per group that
/// is catching up; otherwise prints one plain line per group and peer per update.
struct StatusWatch {
    let daemon: PeerlogDaemon
    let interval: Double
    let count: Int?

    func run() throws {
        let tty = isatty(1) == 1
        var n = 0
        while count.map({ n < $0 }) ?? true {
            let status = try daemon.status()
            if tty {
                print(
                    "\u{1b}[H\u{1b}[2J" + StatusText.render(status) + Self.progress(status, bars: true), terminator: "")
            } else {
                print(Self.progress(status, bars: false), terminator: "")
            }
            fflushStdout()
            n += 1
            if count.map({ n >= $0 }) ?? false { break }
            Thread.sleep(forTimeInterval: max(interval, 0.1))
        }
    }

    /// Per group and connected peer: how far along we are towards the peer's committed mark.
    static func progress(_ s: NodeStatus, bars: Bool) -> String {
        var out = ""
        let time = ISO8601DateFormatter().string(from: Date())
        for g in s.groups {
            let target = max(g.committed, g.peers.compactMap(\.peerCommitted).max() ?? 0)
            let behind = target - g.committed
            if bars {
                guard behind > 0, target > 0 else { continue }
                let done = Double(g.committed) / Double(target)
                let width = 30
                let filled = Int((done * Double(width)).rounded(.down))
                out +=
                    "\(g.name) catching up [\(String(repeating: "#", count: filled))\(String(repeating: ".", count: width - filled))] \(g.committed)/\(target) (\(Int(done * 100))%)\n"
            } else {
                let state = behind > 0 ? "catching up, \(behind) behind" : "in sync"
                out +=
                    "\(time) \(g.name) \(g.id) committed \(g.committed)/\(target) tentative \(g.tentative) \(state), \(g.peers.count) peer(s)\n"
            }
        }
        if !bars && s.groups.isEmpty {
            out += "\(time) no groups; \(s.peers.filter { $0.state == .connected }.count) peer(s) connected\n"
        }
        return out
    }
}

/// Flushes C stdio's stdout (print is buffered when stdout is not a terminal).
func fflushStdout() { fflush(nil) }
