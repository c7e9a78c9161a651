import PeerlogStore

/// What a transaction's changes require of one group's view.
struct OverlayRepair {
    /// Entity keys whose tentative row must be recomputed.
    var keys = Set<String>()
    /// The latest position this transaction inserted or removed.
    var lastChange: OverlayPosition?
    /// Where re-checking must start: `.some(nil)` from the first step.
    var refoldStart: OverlayPosition??

    mutating func changed(at p: OverlayPosition) { lastChange = max(lastChange ?? p, p) }

    mutating func refold(from p: OverlayPosition?) {
        switch refoldStart {
        case .none: refoldStart = .some(p)
        case .some(.none): break
        case .some(.some(let current)): refoldStart = .some(p.map { min($0, current) })
        }
    }

    /// Whether a step at `p` will be re-checked by the refold anyway.
    func refoldCovers(_ p: OverlayPosition) -> Bool {
        switch refoldStart {
        case .none: false
        case .some(.none): true
        case .some(.some(let start)): start <= p
        }
    }
}
