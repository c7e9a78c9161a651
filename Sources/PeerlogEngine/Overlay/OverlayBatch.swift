import PeerlogEncoding
import PeerlogModel

/// The receipts a transaction adds to a group's view, by CID and by (author, counter).
struct OverlayBatch {
    struct Key: Hashable {
        let author: DeviceID
        let counter: UInt64
    }
    let byCID: [CID: Receipt]
    let byCounter: [Key: Receipt]

    init(_ receipts: [Receipt]) {
        var byCID = [CID: Receipt]()
        var byCounter = [Key: Receipt]()
        for r in receipts {
            byCID[r.cid] = r
            byCounter[Key(author: r.author, counter: r.counter)] = r
        }
        self.byCID = byCID
        self.byCounter = byCounter
    }
}
