import PeerlogEngine
import PeerlogModel
import PeerlogStore
import PeerlogTestSupport
import Testing

/// docs/PROTOCOL.md's answers about the replica, checked against the code: when the state
/// hash's `state` is null (§12) and what "one voter at a time" allows (§18.4).
struct ProtocolAnswerTests {
    static let group = try! GroupID(bytes: Array(0..<16))

    /// A group the replica knows nothing of hashes as §12's example: null state, no entities.
    @Test func nullStateHashExample() throws {
        let replica = Replica(store: try Store(), device: try LocalDevice.generate(name: "empty", createdAt: 1))
        let expected = "a64b4bdcb3ccbcd9cc2a9c799b96bda5b1b12d73269514e4a4e3a9d022c10d0d"
        #expect(TestSupport.hex(try replica.stateHash(of: Self.group, view: .committed)) == expected)
        #expect(TestSupport.hex(try replica.stateHash(of: Self.group, view: .tentative)) == expected)
        #expect(try replica.state(of: Self.group, view: .tentative) == nil)
    }

    /// Adding or removing one voter is allowed; swapping one for another differs by two.
    @Test func voterSetsChangeByAtMostOneDevice() throws {
        let owner = try IdentityID(bytes: [UInt8](repeating: 1, count: 32))
        let d = try (2...5).map { try DeviceID(bytes: [UInt8](repeating: UInt8($0), count: 32)) }
        let state = GroupState(
            group: Self.group, name: "g", maxMembers: 12, createdBy: owner,
            authority: .elected(voters: [d[0], d[1], d[2]]),
            members: [owner: Member(identity: owner, role: .owner, status: .active)])
        func change(to voters: [DeviceID]) -> Result<GroupState, RuleViolation> {
            GroupRules.apply(
                .sequencerChanged(.elected(voters: voters)), sender: owner, device: d[0], group: Self.group, to: state)
        }
        #expect((try? change(to: [d[0], d[1], d[2], d[3]]).get()) != nil, "one added")
        #expect((try? change(to: [d[0], d[1]]).get()) != nil, "one removed")
        #expect((try? change(to: [d[0], d[1], d[2]]).get()) != nil, "the same set")
        #expect(throws: RuleViolation("an elected voter set changes one voter at a time (2 differ)")) {
            try change(to: [d[0], d[1], d[3]]).get()
        }
    }
}
