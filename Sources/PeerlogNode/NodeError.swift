/// Errors of the node layer, each one line for the user.
public enum NodeError: Error, CustomStringConvertible, Equatable {
    case invalidAddress(String, String)
    case invalidConfiguration(file: String, line: Int, String)
    case controlSocket(String)
    case alreadyRunning(String)

    public var description: String {
        switch self {
        case .invalidAddress(let text, let why): "invalid address \"\(text)\": \(why)"
        case .invalidConfiguration(let file, let line, let why): "\(file):\(line): \(why)"
        case .controlSocket(let why): "control socket: \(why)"
        case .alreadyRunning(let path): "a daemon already runs for this home (control socket \(path) answers)"
        }
    }
}
