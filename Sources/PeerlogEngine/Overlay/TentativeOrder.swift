import PeerlogEncoding
import PeerlogModel

/// The deterministic tentative order (docs/PROTOCOL.md §11): a topological order of the
/// receipts over two kinds of edges — a parent before its child, and an author's counter c-1
/// before c — choosing among ready receipts the smallest (HLC, CID). Edges to receipts
/// outside the set are ignored. The same set gives the same order on every replica.
public enum TentativeOrder {
    /// Returns `receipts` in the tentative order. Never throws; fewer than two receipts come back
    /// unchanged.
    public static func order(_ receipts: [Receipt]) -> [Receipt] {
        guard receipts.count > 1 else { return receipts }
        var index = [CID: Int]()
        for (i, r) in receipts.enumerated() { index[r.cid] = i }
        var byAuthorCounter = [AuthorKey: Int]()
        for (i, r) in receipts.enumerated() {
            byAuthorCounter[AuthorKey(group: r.group, author: r.author, counter: r.counter)] = i
        }

        var children = [[Int]](repeating: [], count: receipts.count)
        var waiting = [Int](repeating: 0, count: receipts.count)
        for (i, r) in receipts.enumerated() {
            var preds = Set<Int>()
            for p in r.parents { if let j = index[p], j != i { preds.insert(j) } }
            if r.counter > 1,
                let j = byAuthorCounter[AuthorKey(group: r.group, author: r.author, counter: r.counter - 1)]
            {
                preds.insert(j)
            }
            waiting[i] = preds.count
            for j in preds { children[j].append(i) }
        }
        func less(_ a: Int, _ b: Int) -> Bool {
            let (x, y) = (receipts[a], receipts[b])
            return x.hlc != y.hlc ? x.hlc < y.hlc : x.cid < y.cid
        }
        var heap = BinaryHeap(less: less)
        for i in receipts.indices where waiting[i] == 0 { heap.push(i) }
        var out = [Receipt]()
        out.reserveCapacity(receipts.count)
        var done = [Bool](repeating: false, count: receipts.count)
        while out.count < receipts.count {
            guard let i = heap.pop() else {
                // Unreachable with real hashes (a cycle needs a collision); stay total anyway.
                let rest = receipts.indices.filter { !done[$0] }.sorted(by: less)
                heap.push(rest[0])
                waiting[rest[0]] = 0
                continue
            }
            if done[i] { continue }
            done[i] = true
            out.append(receipts[i])
            for c in children[i] {
                waiting[c] -= 1
                if waiting[c] == 0 { heap.push(c) }
            }
        }
        return out
    }

    private struct AuthorKey: Hashable {
        let group: GroupID
        let author: DeviceID
        let counter: UInt64
    }
}

/// A minimal binary min-heap of indices.
struct BinaryHeap {
    private var items: [Int] = []
    private let less: (Int, Int) -> Bool
    init(less: @escaping (Int, Int) -> Bool) { self.less = less }

    mutating func push(_ x: Int) {
        items.append(x)
        var i = items.count - 1
        while i > 0 {
            let p = (i - 1) / 2
            guard less(items[i], items[p]) else { break }
            items.swapAt(i, p)
            i = p
        }
    }

    mutating func pop() -> Int? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let top = items.removeLast()
        var i = 0
        while true {
            let l = 2 * i + 1
            let r = l + 1
            var m = i
            if l < items.count, less(items[l], items[m]) { m = l }
            if r < items.count, less(items[r], items[m]) { m = r }
            if m == i { break }
            items.swapAt(i, m)
            i = m
        }
        return top
    }
}
