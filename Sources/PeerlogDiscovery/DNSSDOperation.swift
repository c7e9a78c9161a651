import CDNSSD

/// One live DNSServiceRef and what it is for. Its address is the callback context, so the
/// session keeps it alive until after DNSServiceRefDeallocate.
final class DNSSDOperation {
    enum Kind { case register, browse, resolve, query }
    let kind: Kind
    /// Key of the tracked service for resolve and query.
    let service: String
    unowned let session: DNSSDSession
    var ref: DNSServiceRef?
    var retired = false

    init(kind: Kind, service: String, session: DNSSDSession) {
        self.kind = kind
        self.service = service
        self.session = session
    }

    var context: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    static func from(_ context: UnsafeMutableRawPointer?) -> DNSSDOperation? {
        guard let context else { return nil }
        let op = Unmanaged<DNSSDOperation>.fromOpaque(context).takeUnretainedValue()
        return op.retired ? nil : op
    }
}
