import PeerlogCapture
import PeerlogCaptureTools
import PeerlogModel
import PeerlogSync
import Testing

/// `capture show`'s filters: connection, type lists, and id prefixes with or without the `b`.
struct RecordFilterTests {
    let commits: RecordView
    let hello: RecordView

    init() throws {
        let r = try Fixtures.receipt(counter: 1)
        let m = SyncMessage.commits(group: Fixtures.group, receipts: [r.encoded], envelopes: []).encoded()
        commits = RecordView(index: 1, record: Fixtures.record(0, data: m))  // connection 1
        hello = RecordView(
            index: 2,
            // connection 2
            record: Fixtures.record(1, data: SyncMessage.hello(versions: [1], capabilities: [], groups: []).encoded()))
    }

    @Test func emptyFilterPassesEverything() {
        #expect(RecordFilter().matches(commits) && RecordFilter().matches(hello))
    }

    @Test func connectionAndTypeLists() {
        #expect(RecordFilter(connection: 1).matches(commits) && !RecordFilter(connection: 1).matches(hello))
        let types = RecordFilter(types: ["vector,commits", "done"])
        #expect(types.matches(commits) && !types.matches(hello))
        #expect(RecordFilter(types: ["hello"]).matches(hello))
    }

    @Test func idPrefixesWithOrWithoutTheMultibaseLetter() {
        let peer = Fixtures.bob.device.string
        #expect(RecordFilter(peer: String(peer.prefix(8))).matches(hello))
        #expect(RecordFilter(peer: String(peer.dropFirst().prefix(8))).matches(hello))
        #expect(!RecordFilter(peer: Fixtures.alice.device.string).matches(hello))
        let group = Fixtures.group.string
        #expect(RecordFilter(group: String(group.dropFirst().prefix(6))).matches(commits))
        // A record about no group never matches a group filter.
        #expect(!RecordFilter(group: String(group.prefix(6))).matches(hello))
    }
}
