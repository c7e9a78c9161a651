import PeerlogCrypto
import PeerlogEncoding
import PeerlogEngine
import PeerlogModel
import PeerlogTestSupport
import Testing

/// `entity.write` (docs/PROTOCOL.md §9.7): the body, the evaluation rules and their order, and
/// the outcome on several replicas.
struct EntityWriteTests {
    let booking = EntityWrite(
        conditions: [.absent(key: "slot/9")],
        changes: [.put(key: "slot/9", value: "ann"), .add(key: "booked", by: 1)])

    /// The worked example's bytes (§9.7), also what cbor2 gives with canonical=True.
    @Test func theWorkedExampleEncodesAsDocumented() throws {
        let hex =
            "a262696681a2636b657966736c6f742f3966616273656e74f5636f707382a3626f7063707574636b657966736c6f742f396576616c756563616e6ea362627901626f7063616464636b657966626f6f6b6564"
        let op = GroupOperation.entityWrite(booking)
        #expect(hexString(CBOREncoder.encode(op.body)) == hex)
        #expect(op.receiptType == "entity.write")
        #expect(try GroupOperation(receiptType: "entity.write", body: op.body) == op)
    }

    @Test func everyKindRoundTrips() throws {
        let link = CID(hashing: [1, 2, 3])
        let write = EntityWrite(
            conditions: [.absent(key: "a"), .version(key: "b", link), .value(key: "c", .int(-3))],
            changes: [
                .put(key: "a", value: "x"), .delete(key: "b"), .add(key: "n", by: -7),
                .insert(key: "s", elements: [1, "b"]), .remove(key: "s", elements: [1]),
                .setFields(key: "r", fields: ["t": "x"]), .removeFields(key: "r", fields: ["u"]),
            ])
        let op = GroupOperation.entityWrite(write)
        #expect(try GroupOperation(receiptType: "entity.write", body: op.body) == op)
        #expect(write.changedKeys == ["a", "b", "n", "s", "r"])
    }

    @Test func malformedBodiesAreRefusedWithOneReason() throws {
        func refusal(_ body: CBOR) -> String? {
            do {
                _ = try GroupOperation(receiptType: "entity.write", body: body)
                return nil
            } catch { return error.reason }
        }
        let put: CBOR = .textMap(["op": "put", "key": "k", "value": 1])
        #expect(refusal(.textMap(["ops": []]))?.contains("1 to 1000 operations") == true)
        #expect(refusal(.textMap(["ops": [put], "if": []]))?.contains("non-empty array") == true)
        #expect(refusal(.textMap(["ops": [put], "extra": 1]))?.contains("unexpected key \"extra\"") == true)
        #expect(
            refusal(.textMap(["ops": [.textMap(["op": "mul", "key": "k", "by": 2])]]))?.contains("one of put") == true)
        #expect(
            refusal(.textMap(["ops": [.textMap(["op": "add", "key": "k", "by": .unsigned(UInt64(Int64.max) + 1)])]]))?
                .contains("integer from -2^63") == true)
        #expect(
            refusal(.textMap(["ops": [put], "if": [.textMap(["key": "k", "absent": false])]]))?.contains("must be true")
                == true)
        #expect(
            refusal(.textMap(["ops": [put], "if": [.textMap(["key": "k", "absent": true, "value": 1])]]))?.contains(
                "exactly one of") == true)
        #expect(
            refusal(.textMap(["ops": [put], "if": [.textMap(["key": "k", "version": .bytes([1])])]]))?.contains(
                "CID link") == true)
        #expect(
            refusal(.textMap(["ops": [.textMap(["op": "insert", "key": "k", "elements": []])]]))?.contains(
                "1 to 1000 items") == true)
        #expect(
            refusal(.textMap(["ops": [.textMap(["op": "put", "key": "", "value": 1])]]))?.contains("1 to 256 bytes")
                == true)
    }

    /// The limits at their boundaries: 1,000 operations pass, 1,001 do not; the same for
    /// conditions and for the items of one set operation.
    @Test func limitsHoldAtTheirBoundaries() throws {
        func ok(_ w: EntityWrite) -> Bool { (try? GroupOperation.entityWrite(w).validate()) != nil }
        let put = EntityWrite.Change.put(key: "k", value: 1)
        #expect(ok(EntityWrite(changes: Array(repeating: put, count: GroupLimits.maxWriteOperations))))
        #expect(!ok(EntityWrite(changes: Array(repeating: put, count: GroupLimits.maxWriteOperations + 1))))
        let cond = EntityWrite.Condition.absent(key: "k")
        #expect(
            ok(EntityWrite(conditions: Array(repeating: cond, count: GroupLimits.maxWriteConditions), changes: [put])))
        #expect(
            !ok(
                EntityWrite(
                    conditions: Array(repeating: cond, count: GroupLimits.maxWriteConditions + 1), changes: [put])))
        let many = (0..<GroupLimits.maxMergeItems).map { CBOR.int(Int64($0)) }
        #expect(ok(EntityWrite(changes: [.insert(key: "s", elements: many)])))
        #expect(!ok(EntityWrite(changes: [.insert(key: "s", elements: many + [-1])])))
    }

    /// Conditions first, against the state before the write; then operations in order; a
    /// failure anywhere leaves every key as it was.
    @Test func evaluationOrderAndAllOrNothing() throws {
        let writer = CID(hashing: [9])
        var held: [String: EntityWrite.Held] = ["n": .init(value: 4, cid: writer), "t": .init(value: "x", cid: writer)]
        func run(_ w: EntityWrite) -> Result<[(key: String, value: CBOR?)], EntityWrite.Rejection> {
            w.apply { held[$0] }
        }
        // A write's own put does not satisfy its condition.
        let selfSatisfying = EntityWrite(
            conditions: [.value(key: "new", 1)], changes: [.put(key: "new", value: 1)])
        #expect(failure(run(selfSatisfying)) == "condition 1 failed: \"new\" holds no value")
        #expect(failure(run(booking)) == nil)
        #expect(
            failure(run(EntityWrite(conditions: [.version(key: "n", CID(hashing: [8]))], changes: [.delete(key: "n")])))
                == "condition 1 failed: \"n\" was last written by \(writer), not \(CID(hashing: [8]))")
        // Operation 2 fails (an add on text): nothing of operation 1 survives.
        let mixed = EntityWrite(changes: [.add(key: "n", by: 1), .add(key: "t", by: 1)])
        #expect(failure(run(mixed)) == "operation 2 (add \"t\") failed: the value is not an integer")
        // Operations see the ones before them.
        let chained = EntityWrite(changes: [.put(key: "c", value: 10), .add(key: "c", by: 5), .add(key: "n", by: -4)])
        let values = try #require(try? run(chained).get())
        #expect(values.map(\.key) == ["c", "n"])
        #expect(values.map(\.value) == [.int(15), .int(0)])
        // Counter overflow is a rejection, not a wrap.
        held["big"] = .init(value: .int(Int64.max), cid: writer)
        #expect(failure(run(EntityWrite(changes: [.add(key: "big", by: 1)])))?.contains("would leave") == true)
        // An integer a put stored above 2^63-1 is not a counter (§9.7), even for a negative add.
        held["huge"] = .init(value: .unsigned(UInt64.max), cid: writer)
        #expect(failure(run(EntityWrite(changes: [.add(key: "huge", by: -1)])))?.contains("not an integer") == true)
        // Sets are distinct and sorted by encoding; removing from absent leaves it absent.
        let sets = try run(
            EntityWrite(changes: [.insert(key: "s", elements: ["b", 1, 1]), .remove(key: "gone", elements: [1])])
        ).get()
        #expect(sets.map(\.value) == [.array([1, "b"]), nil])
        // Field merges keep the other fields.
        held["r"] = .init(value: .textMap(["a": 1, "b": 2]), cid: writer)
        let fields = try run(
            EntityWrite(changes: [.setFields(key: "r", fields: ["c": 3]), .removeFields(key: "r", fields: ["a"])])
        ).get()
        #expect(fields.first?.value == .textMap(["b": 2, "c": 3]))
    }

    func failure(_ r: Result<[(key: String, value: CBOR?)], EntityWrite.Rejection>) -> String? {
        if case .failure(let f) = r { f.reason } else { nil }
    }

    /// Two members book the same slot while apart; the sequencer (alice) commits one, and on
    /// both replicas exactly that booking stands, the other is rejected with its reason, and
    /// the counter counts one booking.
    @Test func twoOfflineClaimsOneStands() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try groupWith(owner: alice, members: [bob])
        func book(_ who: TestReplica, _ name: String) throws -> CID {
            try who.replica.append(
                .entityWrite(
                    EntityWrite(
                        conditions: [.absent(key: "slot/9")],
                        changes: [.put(key: "slot/9", value: .text(name)), .add(key: "booked", by: 1)])), to: group
            ).receipt.cid
        }
        bob.clock.advance(10)
        let bobs = try book(bob, "bob")
        // Bob's tentative view shows his own booking.
        #expect(try bob.get("slot/9", group) == "bob")
        #expect(try bob.replica.writeOutcome(of: bobs) == .tentative(group: group, rejected: nil))
        let alices = try book(alice, "ann")  // committed at once: alice sequences
        try bob.send(group, to: alice)  // bob's booking commits after alice's
        try alice.send(group, to: bob)
        for r in [alice, bob] {
            #expect(try r.get("slot/9", group, .committed) == "ann")
            #expect(try r.get("booked", group, .committed) == .int(1))
            #expect(try r.get("slot/9", group, .tentative) == "ann")
            guard case .rejected(_, _, let reason)? = try r.replica.writeOutcome(of: bobs) else {
                Issue.record(
                    "bob's booking is not rejected: \(String(describing: try r.replica.writeOutcome(of: bobs)))")
                continue
            }
            #expect(reason == "condition 1 failed: \"slot/9\" holds a value")
            guard case .committed? = try r.replica.writeOutcome(of: alices) else {
                Issue.record("alice's booking is not committed")
                continue
            }
            #expect(try r.replica.replayedStateHash(of: group) == r.replica.stateHash(of: group, view: .committed))
            #expect(try r.replica.checkTentativeOverlay(of: group) == .matches)
        }
        #expect(try alice.hashes(group) == bob.hashes(group))
    }

    /// Concurrent counter adds, set inserts and field changes all survive, and the tentative
    /// view of a writer does not move when its writes commit.
    @Test func commutativeKindsLoseNoConcurrentUpdate() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try groupWith(owner: alice, members: [bob])
        try alice.replica.append(.entityWrite(EntityWrite(changes: [.add(key: "n", by: 1)])), to: group)
        try alice.send(group, to: bob)
        for i in 1...5 {
            bob.clock.advance(1)
            alice.clock.advance(1)
            try bob.replica.append(
                .entityWrite(
                    EntityWrite(changes: [
                        .add(key: "n", by: 10), .insert(key: "tags", elements: [.text("b\(i)")]),
                        .setFields(key: "card", fields: ["b": .int(Int64(i))]),
                    ])), to: group)
            try alice.replica.append(
                .entityWrite(
                    EntityWrite(changes: [
                        .add(key: "n", by: 100), .insert(key: "tags", elements: [.text("a\(i)")]),
                        .setFields(key: "card", fields: ["a": .int(Int64(i))]),
                    ])), to: group)
        }
        // Bob's guess before his writes commit: his five adds on the committed 101... (alice's
        // later ones are not here yet).
        #expect(try bob.get("n", group) == .int(1 + 50))
        try alice.send(group, to: bob)
        let guess = try bob.get("n", group)
        #expect(guess == .int(1 + 50 + 500))
        try bob.send(group, to: alice)
        try alice.send(group, to: bob)
        for r in [alice, bob] {
            #expect(try r.get("n", group, .committed) == .int(551))
            #expect(try r.get("n", group, .tentative) == guess)
            let tags = try #require(try r.get("tags", group, .committed)?.arrayValue)
            #expect(tags.count == 10)
            #expect(
                try r.get("card", group, .committed) == .textMap(["a": 5, "b": 5]))
            #expect(try r.replica.tentativeCount(of: group) == 0)
            #expect(try r.hashes(group).committed == r.hashes(group).tentative)
        }
        #expect(try alice.hashes(group) == bob.hashes(group))
    }

    /// In an encrypted group the write is sealed: its keys and values are not in the receipt,
    /// and the members still evaluate the condition the same way.
    @Test func conditionsHoldInAnEncryptedGroup() throws {
        let alice = try TestReplica("alice")
        let bob = try TestReplica("bob")
        let group = try alice.replica.createGroup(name: "secret", encryption: GroupEncryptionSettings(history: false))
        try alice.replica.append(.memberAdded(identity: bob.identity, role: .member), to: group)
        try alice.send(group, to: bob)
        try bob.replica.append(.inviteAccepted, to: group)
        try bob.send(group, to: alice)
        try alice.send(group, to: bob)
        let claim = { (name: String) in
            GroupOperation.entityWrite(
                EntityWrite(conditions: [.absent(key: "owner")], changes: [.put(key: "owner", value: .text(name))]))
        }
        bob.clock.advance(5)
        let bobs = try bob.replica.append(claim("bob-canary"), to: group).receipt
        try alice.replica.append(claim("alice"), to: group)
        #expect(bobs.type == "entity.write")
        #expect(!hexString(bobs.payload).contains(hexString(Array("bob-canary".utf8))))
        try bob.send(group, to: alice)
        try alice.send(group, to: bob)
        for r in [alice, bob] {
            #expect(try r.get("owner", group, .committed) == "alice")
            guard case .rejected(_, _, let reason)? = try r.replica.writeOutcome(of: bobs.cid) else {
                Issue.record("bob's claim is not rejected")
                continue
            }
            #expect(reason.hasPrefix("condition 1 failed"))
        }
        #expect(try alice.hashes(group) == bob.hashes(group))
    }

    /// Random bodies near the valid shape: each is refused with a reason or parses to an
    /// operation whose body parses back to it; applying a parsed one never traps.
    @Test func randomBodiesAreRefusedOrRoundTrip() throws {
        var rng = SeededRandom(seed: 36)
        func value(_ depth: Int) -> CBOR {
            switch Int.random(in: 0..<(depth > 2 ? 4 : 7), using: &rng) {
            case 0: return .int(Int64.random(in: -3...3, using: &rng))
            case 1: return .text(["k", "put", "add", "absent", ""].randomElement(using: &rng)!)
            case 2: return .bool(Bool.random(using: &rng))
            case 3: return .unsigned(UInt64.max - UInt64.random(in: 0...1, using: &rng))
            case 4: return .array((0..<Int.random(in: 0...3, using: &rng)).map { _ in value(depth + 1) })
            default:
                var m = [String: CBOR]()
                for _ in 0..<Int.random(in: 0...4, using: &rng) {
                    let names = ["op", "key", "value", "by", "elements", "fields", "absent", "version", "ops", "if"]
                    m[names.randomElement(using: &rng)!] = value(depth + 1)
                }
                return .textMap(m)
            }
        }
        let ops = ["put", "delete", "add", "insert", "remove", "set_fields", "remove_fields", "x"]
        var parsed = 0
        for _ in 0..<3_000 {
            var change: [String: CBOR] = ["op": .text(ops.randomElement(using: &rng)!), "key": "k"]
            for name in ["value", "by", "elements", "fields"] where Bool.random(using: &rng) { change[name] = value(1) }
            var body: [String: CBOR] = ["ops": .array([.textMap(change)])]
            if Bool.random(using: &rng) { body["if"] = .array([value(1)]) }
            guard let op = try? GroupOperation(receiptType: "entity.write", body: .textMap(body)) else { continue }
            parsed += 1
            #expect(try GroupOperation(receiptType: op.receiptType, body: op.body) == op)
            if case .entityWrite(let w) = op {
                _ = w.apply { _ in EntityWrite.Held(value: value(1), cid: CID(hashing: [1])) }
            }
        }
        #expect(parsed > 10, "the generator should make valid bodies too: \(parsed)")
    }
}
