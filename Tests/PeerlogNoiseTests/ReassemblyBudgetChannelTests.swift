import PeerlogChannel
import PeerlogModel
import Testing

/// Partial messages reserve from a budget shared by channels (docs/PROTOCOL.md §14.7).
@Suite struct ReassemblyBudgetChannelTests {
    static let carol = try! LocalDevice.deterministic(seed: [3], name: "carol", createdAt: 1_700_000_000_000)
    static let fragment = [UInt8](repeating: 7, count: ChannelWire.maxRecordData)

    /// A responder (bob) with an established raw initiator of `device`.
    static func established(_ device: LocalDevice, budget: ReassemblyBudget) throws -> (SecureChannel, RawInitiator) {
        var channel = SecureChannel(
            role: .responder, device: Devices.bob, authorize: Devices.allowAll, reassemblyBudget: budget)
        var raw = try RawInitiator(device: device)
        #expect(try raw.handshake(with: &channel) == [.established(device.certificate)])
        return (channel, raw)
    }

    @Test func fragmentsReserveCapacityAndReleaseItOnCompletionAndClose() throws {
        let budget = ReassemblyBudget(totalBytes: 1 << 20, perIdentityBytes: 200_000)
        var (one, rawOne) = try Self.established(Devices.alice, budget: budget)
        var (two, rawTwo) = try Self.established(Devices.alice, budget: budget)
        let alice = Devices.alice.identity

        #expect(one.receive(try rawOne.record(0x01, Self.fragment)) == [])
        // The capacity asked for; the allocator may round the one it gives up a little.
        let first = budget.reservedBytes(of: alice)
        #expect(first >= 65518 && first < 65518 + 64)
        #expect(one.receive(try rawOne.record(0x01, Self.fragment)) == [])
        let second = budget.reservedBytes(of: alice)
        #expect(second >= 2 * first && second < 2 * first + 128)  // capacity doubles

        // A second device of the same identity shares its share.
        #expect(two.receive(try rawTwo.record(0x01, Self.fragment)) == [])
        #expect(budget.reservedBytes(of: alice) == second + first)
        let refused = two.receive(try rawTwo.record(0x01, Self.fragment))
        #expect(
            refused.last
                == .closed(
                    .resourceLimit(
                        "partial messages of identity \(alice) exceed reassemblyBytesPerIdentity (200000 bytes)")))
        #expect(two.isClosed && two.bufferedBytes == 0)
        #expect(budget.reservedBytes == second)

        // Completing the message gives its reservation back; so does closing mid-message.
        let delivered = one.receive(try rawOne.record(0x02, [1, 2, 3]))
        #expect(delivered == [.deliver(Self.fragment + Self.fragment + [1, 2, 3])])
        #expect(budget.reservedBytes == 0)
        // The next message's first fragment takes the last message's size at once.
        #expect(one.receive(try rawOne.record(0x01, Self.fragment)) == [])
        let hinted = budget.reservedBytes
        #expect(hinted >= 2 * 65518 + 3 && hinted < 2 * 65518 + 3 + 64)
        #expect(one.receive(try rawOne.record(0x01, Self.fragment)) == [])
        #expect(budget.reservedBytes == hinted, "no growth for a message of the same size")
        _ = one.close(reason: "bye")
        #expect(budget.reservedBytes == 0 && one.reassemblyBytesFreedAtClose >= 2 * 65518)
    }

    /// The last message's size is asked for only where the budget has room for it; otherwise
    /// the buffer grows by doubling as before, and the message still arrives.
    @Test func theLastMessagesSizeIsTakenOnlyWithinTheBudget() throws {
        let budget = ReassemblyBudget(totalBytes: 1 << 20, perIdentityBytes: 150_000)
        var (one, rawOne) = try Self.established(Devices.alice, budget: budget)
        var (two, rawTwo) = try Self.established(Devices.alice, budget: budget)
        let whole = Self.fragment + Self.fragment + [1, 2, 3]
        _ = one.receive(try rawOne.record(0x01, Self.fragment))
        _ = one.receive(try rawOne.record(0x01, Self.fragment))
        #expect(one.receive(try rawOne.record(0x02, [1, 2, 3])) == [.deliver(whole)])

        #expect(two.receive(try rawTwo.record(0x01, Self.fragment)) == [])
        let held = budget.reservedBytes
        // 131,039 more would pass 150,000: one fragment's worth is asked for instead.
        #expect(one.receive(try rawOne.record(0x01, Self.fragment)) == [])
        #expect(budget.reservedBytes == 2 * held)
        #expect(two.receive(try rawTwo.record(0x02, [9])) == [.deliver(Self.fragment + [9])])
        _ = one.receive(try rawOne.record(0x01, Self.fragment))
        #expect(one.receive(try rawOne.record(0x02, [1, 2, 3])) == [.deliver(whole)])
        #expect(budget.reservedBytes == 0)
    }

    @Test func theNodeWideBudgetBindsAcrossIdentities() throws {
        let budget = ReassemblyBudget(totalBytes: 150_000, perIdentityBytes: 1 << 20)
        var (alice, rawAlice) = try Self.established(Devices.alice, budget: budget)
        var (carol, rawCarol) = try Self.established(Self.carol, budget: budget)
        #expect(alice.receive(try rawAlice.record(0x01, Self.fragment)) == [])
        #expect(carol.receive(try rawCarol.record(0x01, Self.fragment)) == [])
        let refused = carol.receive(try rawCarol.record(0x01, Self.fragment))
        #expect(
            refused.last
                == .closed(
                    .resourceLimit(
                        "partial messages of identity \(Self.carol.identity) exceed reassemblyBudgetBytes (150000 bytes)"
                    )))
        #expect(budget.reservedBytes == 65518)
        // The peer's end of stream returns the rest.
        _ = alice.inputClosed()
        #expect(budget.reservedBytes == 0)
    }

    @Test func aDroppedChannelReturnsItsShare() throws {
        let budget = ReassemblyBudget(totalBytes: 1 << 20, perIdentityBytes: 1 << 20)
        do {
            var (channel, raw) = try Self.established(Devices.alice, budget: budget)
            #expect(channel.receive(try raw.record(0x01, Self.fragment)) == [])
            #expect(budget.reservedBytes == 65518)
        }
        #expect(budget.reservedBytes == 0)
    }
}
