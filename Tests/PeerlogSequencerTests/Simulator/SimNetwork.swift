@testable import PeerlogSequencer

/// A lossy, duplicating, reordering network between voter indices, with partitions.
struct SimNetwork {
    struct Packet {
        var deliverAt: Int
        var from: Int
        var to: Int
        var message: Msg
    }

    var lossRate = 0.0
    var duplicateRate = 0.0
    /// Delivery delay in ticks, drawn per packet; different delays reorder messages.
    /// 0 means "this tick, if sent before the delivery phase".
    var minDelay = 1
    var maxDelay = 1
    /// Partition side per node; nodes talk only within one side.
    var side: [Int]
    private(set) var inFlight: [Packet] = []

    init(nodes: Int) { side = Array(repeating: 0, count: nodes) }

    func canTalk(_ a: Int, _ b: Int) -> Bool { side[a] == side[b] }

    mutating func send(_ message: Msg, from: Int, to: Int, now: Int, rng: inout SequencerRNG) {
        guard canTalk(from, to), !rng.chance(lossRate) else { return }
        let copies = rng.chance(duplicateRate) ? 2 : 1
        for _ in 0..<copies {
            inFlight.append(
                Packet(deliverAt: now + rng.int(in: minDelay...maxDelay), from: from, to: to, message: message))
        }
    }

    /// Removes and returns the packets due by `now`, shuffled; those crossing a partition
    /// that formed meanwhile are dropped.
    mutating func takeDue(now: Int, rng: inout SequencerRNG) -> [Packet] {
        var due: [Packet] = []
        var later: [Packet] = []
        for packet in inFlight {
            if packet.deliverAt > now {
                later.append(packet)
            } else if canTalk(packet.from, packet.to) {
                due.append(packet)
            }
        }
        inFlight = later
        due.shuffle(using: &rng)
        return due
    }

    mutating func heal() { side = side.map { _ in 0 } }

    /// Splits nodes at random into `sides` groups.
    mutating func partition(sides: Int, rng: inout SequencerRNG) {
        side = side.map { _ in rng.int(in: 0...(sides - 1)) }
    }
}
