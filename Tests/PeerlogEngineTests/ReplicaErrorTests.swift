import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// `ReplicaError`: a code to switch on (the rules' refusals keep theirs), equality on the code,
/// and descriptions that never echo a written value.
@Suite struct ReplicaErrorTests {
    static func code(_ body: () throws -> Void) -> ReplicaError.Code? {
        do { try body() } catch let e as ReplicaError { return e.code } catch {
            Issue.record("not a ReplicaError: \(error)")
        }
        return nil
    }

    @Test func localWritesFailWithTheCodeOfTheirCause() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "g")
        try alice.send(group, to: bob)
        #expect(Self.code { try bob.replica.append(.entityPut(key: "k", value: 1), to: group) } == .notAMember)
        #expect(
            Self.code { try alice.replica.append(.memberRemoved(identity: bob.identity), to: group) } == .notAMember)
        #expect(
            Self.code { try alice.replica.append(.created(name: "again", maxMembers: 3), to: group) } == .ruleViolation)
        #expect(
            Self.code {
                try alice.replica.append(.entityPut(key: String(repeating: "k", count: 10_000), value: 1), to: group)
            } == .invalidOperation)
        let big = CBOR.text("s3cret" + String(repeating: "x", count: Receipt.maxPayloadBytes))
        #expect(
            Self.code { try alice.replica.append(.entityPut(key: "big", value: big), to: group) } == .payloadTooLarge)
        #expect(
            Self.code {
                _ = try alice.replica.appendBatch(
                    Array(repeating: .entityPut(key: "k", value: 1), count: ReplicaLimits().maxBatchOperations + 1),
                    to: group)
            } == .batchTooLarge)
        #expect {
            try alice.replica.appendBatch(
                [.entityPut(key: "a", value: 1), .entityPut(key: "big", value: big)], to: group)
        } throws: {
            ($0 as? BatchError)?.code == .payloadTooLarge && ($0 as? BatchError)?.index == 1
                && !"\($0)".contains("s3cret")
        }
        do { try alice.replica.append(.entityPut(key: "big", value: big), to: group) } catch {
            #expect(!"\(error)".contains("s3cret"), "the description says sizes, not the value")
        }

        _ = try alice.replica.createGroup(name: "twin")
        _ = try alice.replica.createGroup(name: "twin")
        #expect(Self.code { _ = try alice.replica.resolveGroup("nothing") } == .groupNotFound)
        #expect(Self.code { _ = try alice.replica.resolveGroup("twin") } == .ambiguousGroupName)

        try alice.replica.append(.deleted, to: group)
        #expect(Self.code { try alice.replica.append(.entityPut(key: "k", value: 1), to: group) } == .groupDeleted)
        #expect(Self.code { _ = try alice.replica.importExport(lines: ["{\"format\":\"other\"}"]) } == .invalidImport)
    }

    @Test func equalityIsOnTheCodeAndARuleViolationKeepsItsCode() {
        let one = ReplicaError(.notAMember, "one")
        let two = ReplicaError(.notAMember, "two")
        #expect(one == two && one.line != two.line && one.file.hasSuffix("ReplicaErrorTests.swift"))
        #expect(one != ReplicaError(.groupDeleted, "one"))
        #expect(Set([one, two]).count == 1)
        #expect(ReplicaError.Code.groupDeleted.description == "groupDeleted")
        let violation = RuleViolation("group is deleted", code: .groupDeleted)
        #expect(
            ReplicaError(violation).code == .groupDeleted && ReplicaError(violation).description == "group is deleted")
        #expect(violation == RuleViolation("group is deleted"), "rule verdicts compare by their stored reason")
    }
}
