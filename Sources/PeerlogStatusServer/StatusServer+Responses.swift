import Hummingbird
import NIOCore
import Synchronization

/// The answers of `StatusServer`: the event stream, plain responses, and the token check.
extension StatusServer {
    /// The live stream of `/events`: `retry` first, then one `status` event per sample.
    static func events(_ feed: StatusFeed, channel: any Channel) -> Response {
        guard let stream = feed.subscribe() else {
            // The refused connection closes once the answer left: held open (keep-alive), 500
            // refused pages took every one of the server's `maxConnections` slots, and a plain
            // `/api/status` waited for their idle timeouts.
            var headers = HTTPFields()
            headers[.contentType] = "text/plain"
            headers[.connection] = "close"
            return Response(
                status: .serviceUnavailable, headers: headers,
                body: ResponseBody { writer in
                    try await writer.write(
                        ByteBuffer(string: "too many live pages (\(StatusFeed.maxSubscribers)); close one\n"))
                    try await writer.finish(nil)
                    channel.eventLoop.scheduleTask(in: .milliseconds(50)) { channel.close(promise: nil) }
                })
        }
        var headers = HTTPFields()
        headers[.contentType] = "text/event-stream"
        headers[.cacheControl] = "no-store"
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                for await document in stream {
                    var buffer = ByteBuffer(string: "event: status\ndata: ")
                    buffer.writeBytes(document)
                    buffer.writeString("\n\n")
                    try await writer.write(buffer)
                }
                try await writer.finish(nil)
            })
    }

    static func response(
        _ text: String, type: String, status: HTTPResponse.Status = .ok
    ) -> Response {
        response(Array(text.utf8), type: type, status: status)
    }

    static func response(
        _ bytes: [UInt8], type: String, status: HTTPResponse.Status = .ok
    ) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// Set once, read from another task.
    final class Flag: Sendable {
        private let value = Atomic<Bool>(false)
        func set() { value.store(true, ordering: .relaxed) }
        var isSet: Bool { value.load(ordering: .relaxed) }
    }

    /// The token check, before routing: without the token even an unknown path is 401.
    /// A request's context with its connection, so a refused event stream can close it.
    struct StatusRequestContext: RequestContext {
        var coreContext: CoreRequestContextStorage
        let channel: any Channel
        init(source: ApplicationRequestContextSource) {
            coreContext = .init(source: source)
            channel = source.channel
        }
    }

    struct Guarded<Inner: HTTPResponder>: HTTPResponder where Inner.Context == StatusRequestContext {
        let access: HTTPAccess
        let inner: Inner

        func respond(to request: Request, context: StatusRequestContext) async throws -> Response {
            guard access.allows(authorization: request.headers[.authorization], query: request.uri.query) else {
                var headers = HTTPFields()
                headers[.wwwAuthenticate] = #"Bearer realm="peerlog""#
                headers[.contentType] = "text/plain"
                return Response(
                    status: .unauthorized, headers: headers,
                    body: .init(
                        byteBuffer: ByteBuffer(
                            string: "this page needs its token: ?token=… or Authorization: Bearer …\n")))
            }
            do { return try await inner.respond(to: request, context: context) } catch let error as HTTPError {
                return StatusServer.response(
                    "\(error.status.code) \(error.status.reasonPhrase)\n", type: "text/plain", status: error.status)
            }
        }
    }
}
