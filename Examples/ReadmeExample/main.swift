import Peerlog

// Open (or create) a home: this device's keys and its replica.
let peerlog = try await Peerlog.open(home: "/tmp/peerlog-readme-example")
let group = try await peerlog.createGroup(named: "notes")

// Sync with devices on the LAN while the app runs (cancel the task to stop).
var lan = NetworkOptions()
lan.listen = PeerAddress(host: "0.0.0.0", port: 7300)
let network = Task { try await peerlog.run(lan) }

// Changes from now on: this app's writes, other devices', the CLI's on this home.
let changes = peerlog.changes(in: group)
try await peerlog.put("note/1", "Buy milk", in: group)
for try await change in changes {
    guard case .entity(let e) = change.event else { continue }
    let text = try e.newValue(as: String.self) ?? "(deleted)"
    print(e.key, text, e.isTentative ? "(tentative)" : "(committed)")
}
network.cancel()
