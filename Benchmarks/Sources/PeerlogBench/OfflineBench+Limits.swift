import PeerlogEngine
import PeerlogModel

/// The limits the offline bench writes under: room for the backlog and every timed append.
func offlineLimits(room: Int) -> ReplicaLimits {
    var limits = ReplicaLimits()
    limits.maxWaitingLocalWrites = room
    return limits
}

/// The offline-limit check alone (`offlineHeadroom`: the same reads in a read transaction),
/// per W, and its ratio between the largest and the smallest W.
func offlineCheckFigures(_ stores: [(w: Int, replica: Replica, group: GroupID)]) {
    var rates = [Double]()
    for store in stores {
        let waiting = (try? store.replica.offlineHeadroom(of: store.group).waiting) ?? -1
        precondition(waiting >= store.w, "the check sees \(waiting) of \(store.w) waiting")
        rates.append(
            rate("W=\(store.w): offline-limit check (headroom read)", batch: 500) { _ in
                _ = try! store.replica.offlineHeadroom(of: store.group)
            })
    }
    guard let first = rates.first, let last = rates.last, let w0 = stores.first?.w, let w1 = stores.last?.w else {
        return
    }
    ratio("check rate W=\(w1) / W=\(w0)", last / first, target: 0.8)
}
