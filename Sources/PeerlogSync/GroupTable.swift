import PeerlogModel

/// A session's per-group states, and the groups among them with something to send, in the
/// order they got it: serving the next group costs O(1) however many groups are synced
/// (a scan over every group after every message made a catch-up of G groups O(G²)).
///
/// `GroupSync.hasWork` depends only on the state's own fields, so every change to it goes
/// through this subscript, which queues a group the moment it has work. A group served and
/// still with work is queued again behind the others: round robin.
struct GroupTable {
    private var states: [GroupID: GroupSync] = [:]
    /// Groups queued for `nextWithWork`, oldest first, from `head` on.
    private var queue: [GroupID] = []
    private var head = 0
    private var queued = Set<GroupID>()

    subscript(group: GroupID) -> GroupSync? {
        get { states[group] }
        _modify {
            yield &states[group]
            noteWork(group)
        }
        set {
            states[group] = newValue
            noteWork(group)
        }
    }

    /// Forgets a group (a queued entry for it is skipped when reached).
    @discardableResult
    mutating func removeValue(forKey group: GroupID) -> GroupSync? { states.removeValue(forKey: group) }

    var count: Int { states.count }

    /// The group that has waited longest with work to do, taken off the queue (nil: none has).
    mutating func nextWithWork() -> GroupID? {
        while head < queue.count {
            let group = queue[head]
            head += 1
            queued.remove(group)
            if states[group]?.hasWork == true {
                compact()
                return group
            }
        }
        queue.removeAll(keepingCapacity: true)
        head = 0
        return nil
    }

    private mutating func noteWork(_ group: GroupID) {
        guard states[group]?.hasWork == true, queued.insert(group).inserted else { return }
        queue.append(group)
    }

    /// Drops the consumed front once it is most of the array.
    private mutating func compact() {
        guard head > 1_024, head * 2 > queue.count else { return }
        queue.removeFirst(head)
        head = 0
    }
}
