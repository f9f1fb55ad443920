import Backstage
import Foundation
import GRDB

// A second app, written from the README alone: an old version's store moved out of Documents
// by a plan, per-account stores created with their schema by the description's migrations, and
// the launch check. `scripts/try-example` builds it against a clone of Backstage and runs it.
let root = URL(filePath: CommandLine.arguments.count > 1 ? CommandLine.arguments[1] : NSTemporaryDirectory() + "notes-app-\(getpid())")
let container = AppContainer.iOSSandbox(root: root)
try FileManager.default.createDirectory(at: container.documents, withIntermediateDirectories: true)

// An old version left a store in Documents.
let old = try DatabaseQueue(path: container.documents.appending(path: "Journal.sqlite").path)
try old.write { db in
    try db.execute(sql: "CREATE TABLE entry (id INTEGER PRIMARY KEY, text TEXT)")
    for n in 1...50 { try db.execute(sql: "INSERT INTO entry (text) VALUES (?)", arguments: ["entry \(n)"]) }
}
try old.close()

let plan = UpgradePlan(name: "v1-to-v2", version: "v2") {
    UpgradeStep.relocate(from: ContainerLocation(.documents, "Journal.sqlite"), to: ContainerLocation(.applicationSupport, "Journal.sqlite"))
    UpgradeStep.quarantine()
}
if Upgrader.needsUpgrade(container, plan) {
    let report = try await Upgrader(container: container).upgrade(plan)
    print("upgraded:", report.steps.map { "\($0.description): \($0.outcome)" }.joined(separator: "; "))
}
print("pending after the upgrade:", Upgrader.needsUpgrade(container, plan))

let stores = StoreContainer(name: "Journal", container: container)
stores.storeDescriptions[0].migrations = [
    .init(id: "v1-entries", sql: "CREATE TABLE IF NOT EXISTS entry (id INTEGER PRIMARY KEY, text TEXT)"),
    .init(id: "v2-mood", sql: "ALTER TABLE entry ADD COLUMN mood TEXT"),
]
try await stores.loadStores()
try stores.write { db in try db.execute(sql: "INSERT INTO entry (text, mood) VALUES ('today', 'fine')") }
let count = try stores.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM entry") ?? 0 }
print("entries in the main store:", count)

for account in ["alice", "bob"] {
    let store = try stores.accountStore(account)
    try store.write { db in
        try db.execute(sql: "INSERT INTO entry (text, mood) VALUES (?, 'new')", arguments: ["\(account)'s first entry"])
    }
    let rows = try store.read { db in try String.fetchAll(db, sql: "SELECT text FROM entry") }
    print("\(account):", rows)
}
print("pending at the next launch:", Upgrader.needsUpgrade(container, plan))
