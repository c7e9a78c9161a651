import Foundation
import Peerlog
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A one-line progress bar on stderr for `export` and `import`, redrawn in place at most ten
/// times a second; only when stderr is a terminal (`bar` is nil otherwise, so scripts and
/// logs see no progress lines).
final class TransferProgressBar: Sendable {
    private struct State {
        var lastDraw: ContinuousClock.Instant?
        var drawn = false
    }
    private let state = Mutex(State())

    /// A bar when stderr is a terminal, else nil.
    static func onTerminal() -> TransferProgressBar? { isatty(2) == 1 ? TransferProgressBar() : nil }

    /// The callback to hand to `Peerlog.export`/`import`.
    var report: @Sendable (PeerlogTransferProgress) -> Void { { [self] in self.draw($0) } }

    private func draw(_ p: PeerlogTransferProgress) {
        let now = ContinuousClock.now
        let finished = p.completed >= p.total
        let due = state.withLock { s -> Bool in
            if !finished, let last = s.lastDraw, now - last < .milliseconds(100) { return false }
            s.lastDraw = now
            s.drawn = true
            return true
        }
        guard due else { return }
        FileHandle.standardError.write(Data(("\r\u{1b}[K" + Self.line(p)).utf8))
    }

    /// Clears the bar's line (before the command prints its result or error).
    func clear() {
        let drawn = state.withLock { s in
            defer { s.drawn = false }
            return s.drawn
        }
        if drawn { FileHandle.standardError.write(Data("\r\u{1b}[K".utf8)) }
    }

    static func line(_ p: PeerlogTransferProgress) -> String {
        let done = p.total > 0 ? min(1, Double(p.completed) / Double(p.total)) : 1
        let width = 30
        let filled = Int((done * Double(width)).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
        let amount =
            switch p.phase {
            case .exporting: "\(p.completed)/\(p.total) lines"
            case .checking, .applying: "\(mebibytes(p.completed))/\(mebibytes(p.total)) MiB"
            }
        let phase =
            switch p.phase {
            case .exporting: "exporting"
            case .checking: "checking "
            case .applying: "applying "
            }
        return "\(phase) [\(bar)] \(Int(done * 100))% \(amount)"
    }

    private static func mebibytes(_ bytes: Int) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }
}
