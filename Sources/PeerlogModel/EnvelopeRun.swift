import PeerlogCrypto
import PeerlogEncoding

/// A batched envelope (docs/PROTOCOL.md §3.5): one sequencer signature over the Merkle root of a
/// run of consecutive seqs, so a receiver pays one Ed25519 verification per run instead of one
/// per seq. Each seq still travels and is stored as its own envelope item (the signed run header
/// plus that seq's Merkle path), so any single seq can be served alone.
public enum EnvelopeRun {
    /// Longest run one signature may cover: a path has at most 8 hashes, so an item stays
    /// under `Envelope.maxEncodedBytes`.
    public static let maxLength: UInt64 = 256

    /// The signed run header: `{"v", "group", "first_seq", "count", "root", "term", "sequencer", "received_at"}`.
    public struct Header: Hashable, Sendable {
        /// The group id (header `group`).
        public let group: GroupID
        /// The run's first seq, at least 1 (header `first_seq`).
        public let firstSeq: UInt64
        /// Seqs in the run, 2...`EnvelopeRun.maxLength`: `firstSeq` … `firstSeq + count − 1` (header
        /// `count`).
        public let count: UInt64
        /// RFC 9162 Merkle tree head over the run's leaves (see `leafHash`).
        public let root: [UInt8]
        /// Election term, 0 for solo and relay sequencers (header `term`).
        public let term: UInt64
        /// The signing sequencer's key (header `sequencer`).
        public let sequencer: DeviceID
        /// When the sequencer signed the run, in milliseconds since the Unix epoch (header
        /// `received_at`).
        public let receivedAt: UInt64
        /// The exact signed bytes.
        public let payload: [UInt8]

        package init(payload: [UInt8]) throws {
            let what = "envelope run"
            let map = try Fields.decode(
                payload, what: what, decoder: Fields.payloadDecoder(maxBytes: Envelope.maxEncodedBytes))
            try Fields.requireKeys(
                map, ["v", "group", "first_seq", "count", "root", "term", "sequencer", "received_at"], what: what)
            try Fields.version(map, what: what)
            group = try GroupID(bytes: try Fields.bytes(map, "group", what: what, count: GroupID.length))
            firstSeq = try Fields.uint(map, "first_seq", what: what)
            count = try Fields.uint(map, "count", what: what)
            guard firstSeq >= 1 else { throw ModelError(.fieldOutOfRange, "envelope run first_seq must be at least 1") }
            guard (2...EnvelopeRun.maxLength).contains(count) else {
                throw ModelError(.fieldOutOfRange, "envelope run count must be 2...\(EnvelopeRun.maxLength)")
            }
            guard firstSeq <= UInt64.max - count else {
                throw ModelError(.fieldOutOfRange, "envelope run overflows seq")
            }
            root = try Fields.bytes(map, "root", what: what, count: 32)
            term = try Fields.uint(map, "term", what: what)
            sequencer = try DeviceID(bytes: try Fields.bytes(map, "sequencer", what: what, count: 32))
            receivedAt = try Fields.uint(map, "received_at", what: what)
            self.payload = payload
        }

        static func encode(
            group: GroupID, firstSeq: UInt64, count: UInt64, root: [UInt8], term: UInt64, sequencer: DeviceID,
            receivedAt: UInt64
        ) -> [UInt8] {
            CBOREncoder.encode(
                .textMap([
                    "v": 1,
                    "group": .bytes(group.bytes),
                    "first_seq": .unsigned(firstSeq),
                    "count": .unsigned(count),
                    "root": .bytes(root),
                    "term": .unsigned(term),
                    "sequencer": .bytes(sequencer.bytes),
                    "received_at": .unsigned(receivedAt),
                ]))
        }
    }

    /// Signs consecutive seqs `firstSeq, firstSeq+1, …` for `receipts` (2...maxLength of them)
    /// and returns one envelope item per seq, in seq order.
    public static func sign(
        group: GroupID, firstSeq: UInt64, receipts: [CID], term: UInt64, receivedAt: UInt64, key: Ed25519.PrivateKey
    ) throws -> [Envelope] {
        guard (2...Int(maxLength)).contains(receipts.count) else {
            throw ModelError(.fieldOutOfRange, "an envelope run covers 2...\(maxLength) seqs")
        }
        let leaves = receipts.enumerated().map { leafHash(seq: firstSeq + UInt64($0.offset), receipt: $0.element) }
        let (root, paths) = tree(leaves: leaves)
        let header = Header.encode(
            group: group, firstSeq: firstSeq, count: UInt64(receipts.count), root: root, term: term,
            sequencer: DeviceID(publicKey: key.publicKey), receivedAt: receivedAt)
        let signature = key.signature(for: SignatureContext.envelopeRun.message(for: header))
        // The header is parsed once, as a receiver would (its checks included); each item is then
        // built from its parts, not parsed back from the bytes just encoded.
        let parsed = try Header(payload: header)
        return receipts.enumerated().map { i, cid in
            Envelope(item: parsed, seq: firstSeq + UInt64(i), receipt: cid, path: paths[i], signature: signature)
        }
    }

    /// Splits `receipts` (for seqs from `firstSeq`) into runs of at most `maxLength`; a run of
    /// one is a single envelope (§3.4), the form every peer reads. The items in seq order.
    public static func signRuns(
        group: GroupID, firstSeq: UInt64, receipts: [CID], term: UInt64, receivedAt: UInt64, key: Ed25519.PrivateKey
    ) throws -> [Envelope] {
        try signEachRun(
            group: group, firstSeq: firstSeq, receipts: receipts, term: term, receivedAt: receivedAt, key: key
        ).flatMap { $0 }
    }

    /// `signRuns`, one array of items per run (what a store keeps one row for, §10).
    public static func signEachRun(
        group: GroupID, firstSeq: UInt64, receipts: [CID], term: UInt64, receivedAt: UInt64, key: Ed25519.PrivateKey
    ) throws -> [[Envelope]] {
        try stride(from: 0, to: receipts.count, by: Int(maxLength)).map { start in
            let chunk = Array(receipts[start..<min(start + Int(maxLength), receipts.count)])
            let seq = firstSeq + UInt64(start)
            return chunk.count == 1
                ? [
                    try Envelope.sign(
                        group: group, seq: seq, receipt: chunk[0], term: term, receivedAt: receivedAt, key: key)
                ]
                : try sign(group: group, firstSeq: seq, receipts: chunk, term: term, receivedAt: receivedAt, key: key)
        }
    }

    /// Leaf: SHA-256(0x00 ‖ seq as 8 bytes big-endian ‖ binary CID). The seq inside the leaf
    /// ties each CID to its position, whatever the path says.
    public static func leafHash(seq: UInt64, receipt: CID) -> [UInt8] {
        var input: [UInt8] = [0x00]
        for shift in stride(from: 56, through: 0, by: -8) {
            input.append(UInt8(truncatingIfNeeded: seq >> UInt64(shift)))
        }
        input += receipt.bytes
        return SHA256.hash(input)
    }

    /// Interior node: SHA-256(0x01 ‖ left ‖ right).
    static func nodeHash(_ left: [UInt8], _ right: [UInt8]) -> [UInt8] { SHA256.hash([0x01] + left + right) }

    /// RFC 9162 §2.1.1 tree head of `leaves` (at least one) and each leaf's path (sibling hashes,
    /// bottom-up): what a signer builds, and what a store rebuilds from the leaves it kept.
    package static func tree(leaves: [[UInt8]]) -> (root: [UInt8], paths: [[[UInt8]]]) {
        var paths = [[[UInt8]]](repeating: [], count: leaves.count)
        let root = tree(leaves[...], offset: 0, paths: &paths)
        return (root, paths)
    }

    /// RFC 9162 §2.1.1 tree head of `leaves` (at least one), without the paths.
    package static func root(leaves: ArraySlice<[UInt8]>) -> [UInt8] {
        guard leaves.count > 1 else { return leaves.first! }
        var k = 1
        while k * 2 < leaves.count { k *= 2 }
        let split = leaves.startIndex + k
        return nodeHash(root(leaves: leaves[..<split]), root(leaves: leaves[split...]))
    }

    /// RFC 9162 §2.1.1 tree head of `leaves`, appending each leaf's sibling hashes (bottom-up) to `paths`.
    private static func tree(_ leaves: ArraySlice<[UInt8]>, offset: Int, paths: inout [[[UInt8]]]) -> [UInt8] {
        guard leaves.count > 1 else { return leaves.first! }
        var k = 1
        while k * 2 < leaves.count { k *= 2 }
        let split = leaves.startIndex + k
        let left = tree(leaves[leaves.startIndex..<split], offset: offset, paths: &paths)
        let right = tree(leaves[split...], offset: offset + k, paths: &paths)
        for i in offset..<(offset + k) { paths[i].append(right) }
        for i in (offset + k)..<(offset + leaves.count) { paths[i].append(left) }
        return nodeHash(left, right)
    }

    /// RFC 9162 §2.1.3.2: whether `path` proves `leaf` at `index` in a tree of `size` leaves with head `root`.
    public static func verifyPath(leaf: [UInt8], index: UInt64, size: UInt64, path: [[UInt8]], root: [UInt8]) -> Bool {
        guard index < size else { return false }
        var fn = index
        var sn = size - 1
        var r = leaf
        for p in path {
            guard sn != 0 else { return false }
            if fn & 1 == 1 || fn == sn {
                r = nodeHash(p, r)
                if fn & 1 == 0 {
                    while fn & 1 == 0 && fn != 0 {
                        fn >>= 1
                        sn >>= 1
                    }
                }
            } else {
                r = nodeHash(r, p)
            }
            fn >>= 1
            sn >>= 1
        }
        return sn == 0 && r == root
    }
}
