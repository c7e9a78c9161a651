import PeerlogModel
import Testing

@testable import PeerlogSync

/// The session's queue of groups with work: every state change that gives a group work queues
/// it once, groups are served oldest first, and one served with work left goes behind the rest.
struct GroupTableTests {
    static func group(_ n: UInt8) throws -> GroupID { try GroupID(bytes: [UInt8](repeating: n, count: 16)) }

    /// A state with work to send (its peer's vector known, something new).
    static var busy: GroupSync {
        var s = GroupSync()
        s.peerVectorKnown = true
        s.dirty = true
        return s
    }

    @Test func servesGroupsWithWorkRoundRobinAndSkipsTheRest() throws {
        var table = GroupTable()
        let (a, b, c) = try (Self.group(1), Self.group(2), Self.group(3))
        table[a] = GroupSync()  // no work: not queued
        table[b] = Self.busy
        table[c] = Self.busy
        #expect(table.nextWithWork() == b)
        // b served, still busy: behind c.
        table[b]!.owesCaughtUp = true
        #expect(table.nextWithWork() == c)
        // a gets work through an in-place change.
        table[a]!.peerVectorKnown = true
        table[a]!.dirty = true
        #expect(table.nextWithWork() == b)
        #expect(table.nextWithWork() == a)
        #expect(table.nextWithWork() == nil)
        // Work done before it is served: skipped. A removed group: skipped, then queued anew.
        table[c]!.dirty = true
        table[c]!.dirty = false
        table[b]!.dirty = true
        table.removeValue(forKey: b)
        #expect(table.nextWithWork() == nil)
        table[b] = Self.busy
        #expect(table.nextWithWork() == b)
        #expect(table.count == 3)
    }

    /// Many groups, each served once per round: the queue never holds a group twice.
    @Test func eachBusyGroupIsServedOncePerRound() throws {
        var table = GroupTable()
        let groups = try (0..<200).map {
            try GroupID(bytes: [UInt8](repeating: 0, count: 14) + [UInt8($0 >> 8), UInt8($0 & 0xff)])
        }
        for g in groups { table[g] = Self.busy }
        for g in groups { table[g]!.dirty = true }  // changes while queued add nothing
        var served = [GroupID]()
        while let g = table.nextWithWork(), served.count < 400 {
            served.append(g)
            if served.count <= 200 { table[g]!.dirty = true } else { table[g]!.dirty = false }
        }
        #expect(served.count == 400)
        #expect(Array(served.prefix(200)) == groups && Array(served.suffix(200)) == groups)
    }
}
