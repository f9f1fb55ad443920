import Backstage
import BackstageTestSupport
import Foundation
import Testing

/// The README's Swift example, kept here so it always compiles and does what it says.
@Suite struct ReadmeExampleTests {
    @Test func theReadmeExampleMovesTheStoreOut() async throws {
        let app = try TestContainer()
        try PythonSQLite.writeThenKill(app.documentsStore("MyApp.sqlite").main, committed: 10, walOnly: 10)
        let appRoot = app.root
        var printed: [String] = []
        func print(_ line: String) { printed.append(line) }

        // README begin
        let container = AppContainer.iOSSandbox(root: appRoot)
        let audit = try Auditor(container: container).audit()
        if !audit.isClean {
            let report = try await Relocator(container: container).relocate()
            for store in report.moved {
                print("\(store.store) moved to Application Support by \(store.strategy)")
            }
        }
        // README end

        #expect(printed == ["MyApp.sqlite moved to Application Support by rename"])
        #expect(try PythonSQLite.inspect(app.supportStore("MyApp.sqlite")).rows == 20)
    }
}
