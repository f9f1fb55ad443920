import Backstage
import BackstageHarness
import BackstageTestSupport
import Foundation
import Testing

/// The harness and `backstage-simulate-child` exchange one typed request: what the harness encodes
/// the child decodes as the same value, and a request the child cannot read is refused with a named
/// error (exit 2, one sentence on stderr), never a crash, and runs nothing.
@Suite struct SimulateChildRequestTests {
    static let requests: [SimulateChildRequest] = [
        SimulateChildRequest(.upgrade(arguments: ["/tmp/app", "--plan", "a b.json", "--budget", "20.0"])),
        SimulateChildRequest(.upgrade(arguments: ["/tmp/app"], crashAt: CrashPoint(.relocate, .committed, occurrence: 2))),
        SimulateChildRequest(.upgradeChain(.init(container: "/tmp/app", plans: ["a b.json", "c.json"], budget: 2.5, json: true))),
        SimulateChildRequest(
            .upgradeChain(.init(container: "/tmp/app", plans: [], budget: 20, json: false), crashAt: CrashPoint(.split, .copied))),
        SimulateChildRequest(.relocate(arguments: ["--layout", "xdg", "--app", "Notes"], crashAt: .supportMoved)),
        SimulateChildRequest(.import(arguments: ["/tmp/a.zip", "/tmp/app"], crashAt: .moved(60))),
        SimulateChildRequest(.import(arguments: [], crashAt: .stagingRemoved)),
        SimulateChildRequest(.fixtureWriter(.init(
            store: "/tmp/app/Documents/Notes.sqlite", catalog: "/tmp/Notes", schema: "schemas/v1.sql", seed: .max, rows: 12,
            ending: .killBeforeCheckpoint))),
        SimulateChildRequest(
            .upgrade(arguments: ["/tmp/app", "--plan", "p.json"]),
            recorder: .init(log: "/tmp/disk.log", stash: "/tmp/stash", cutBefore: 0, skippingFolderFsyncsEndingWith: "/Caches")),
        SimulateChildRequest(.relocate(arguments: ["/tmp/app", "--store", "Notes.sqlite"]), recorder: .init(log: "/tmp/disk.log")),
    ]

    @Test(arguments: requests)
    func aRequestRoundTripsThroughItsJSON(_ request: SimulateChildRequest) throws {
        let data = try request.encoded()
        #expect(try SimulateChildRequest.decode(data) == request, "\(String(decoding: data, as: UTF8.self))")
        #expect(try SimulateChildRequest.decode(try JSONEncoder().encode(request)) == request)
    }

    /// The JSON is readable: the command's name as the key, a crash point as its label.
    @Test func aRequestsJSONNamesItsCommandAndCrashPoint() throws {
        let text = String(decoding: try Self.requests[1].encoded(), as: UTF8.self)
        #expect(text == #"{"command":{"upgrade":{"arguments":["/tmp/app"],"crashAt":"relocate:committed@2"}},"format":1}"#)
        let written = #"{"format": 1, "command": {"import": {"arguments": ["a.zip"], "crashAt": "moved:3"}}}"#
        #expect(try SimulateChildRequest.decode(Data(written.utf8)) == SimulateChildRequest(.import(arguments: ["a.zip"], crashAt: .moved(3))))
        for point in ["journaled", "moved:1", "moved-in", "staging-removed"] {
            #expect(SimulateChildRequest.ImportPoint(point)?.description == point)
        }
    }

    static let garbled: [(String, SimulateChildRequestError)] = [
        ("", .empty),
        (" \n", .empty),
        ("upgrade /tmp/app --crash-at relocate:committed", .notJSON("The given data was not valid JSON.")),
        (#"{"format": 1, "command": {"frobnicate": {"arguments": []}}}"#, .unknownCommand("frobnicate")),
        (#"{"format": 2, "command": {"upgrade": {"arguments": []}}}"#, .newerFormat(2)),
        (#"{"command": {"upgrade": {"arguments": []}}}"#, .invalid("format: missing")),
        (#"{"format": 1, "command": {"upgrade": {"crashAt": "split:copied"}}}"#, .invalid("command.upgrade.arguments: missing")),
        (#"{"format": 1, "command": {"upgrade": {"arguments": [1]}}}"#, .invalid("command.upgrade.arguments[0]: not a string")),
        (#"{"format": 1, "command": {}}"#, .invalid("command: one key, the command's name (upgrade, upgradeChain, relocate, import, fixtureWriter), not 0 ()")),
        (#"{"format": 1, "command": {"relocate": {"arguments": [], "crashAt": "halfway"}}}"#,
         .notACrashPoint("halfway", command: "relocate", forms: StepPhase.allCases.map(\.rawValue))),
        (#"{"format": 1, "command": {"import": {"arguments": [], "crashAt": "moved:0"}}}"#,
         .notACrashPoint("moved:0", command: "import", forms: ["journaled", "moved:N", "moved-in", "staging-removed"])),
        (#"{"format": 1, "command": {"upgradeChain": {"container": "/tmp/app", "budget": 2}}}"#,
         .invalid("command.upgradeChain.plans: missing")),
        (#"{"format": 1, "command": {"upgradeChain": {"container": "/tmp/app", "plans": [], "budget": 2, "crashAt": "split"}}}"#,
         .notACrashPoint("split", command: "upgradeChain (kind:phase[@N])", forms: CrashPoint.forms)),
        (#"{"format": 1, "command": {"upgrade": {"arguments": []}}, "recorder": {"log": "/tmp/l", "cutBefore": -1}}"#,
         .invalid("recorder.cutBefore: -1, must be 0 or more")),
    ]

    @Test func anUnknownOrGarbledRequestIsANamedError() {
        for (input, expected) in Self.garbled {
            #expect(throws: expected, "\(input)") { try SimulateChildRequest.decode(Data(input.utf8)) }
        }
    }

    /// The child says which error, in one sentence, exits 2 (usage) and touches nothing: not even
    /// the container a readable part of the request names.
    @Test func theChildRefusesAnUnknownOrGarbledRequestWithANamedError() throws {
        let app = try TestContainer()
        try makeWorkoutStore(app.documentsStore("Workout.sqlite").main)
        let plan = app.root.appending(path: "plan.json")
        try Data(#"{"name": "v1-to-v2", "steps": [{"relocate": {"from": "documents/Workout.sqlite", "to": "applicationSupport/Workout.sqlite"}}]}"#.utf8)
            .write(to: plan)
        let before = snapshot(app.root)
        let arguments = try String(decoding: JSONEncoder().encode([app.root.path, "--plan", plan.path]), as: UTF8.self)
        let inputs = Self.garbled.map { ($0.0, $0.1) } + [
            (#"{"format": 1, "command": {"upgrade": {"arguments": \#(arguments), "crashAt": "relocate:comitted"}}}"#,
             SimulateChildRequestError.notACrashPoint("relocate:comitted", command: "upgrade (kind:phase[@N])", forms: CrashPoint.forms)),
            (#"{"format": 1, "command": {"upgrade": {"arguments": \#(arguments)}, "relocate": {"arguments": \#(arguments)}}}"#,
             .invalid("command: one key, the command's name (upgrade, upgradeChain, relocate, import, fixtureWriter), not 2 (relocate, upgrade)")),
        ]
        for (input, expected) in inputs {
            let result = try runProcess(simulateChildExecutable, [], input: Data(input.utf8))
            #expect(result.status == 2 && result.killedBySignal == nil, "\(input): \(result.status) \(result.stderr)")
            // The two keys of the last may come in either order.
            if case .invalid(let reason) = expected, reason.hasSuffix("not 2 (relocate, upgrade)") {
                #expect(result.stderr.hasPrefix("error: the request is not valid: command: one key"), "\(result.stderr)")
            } else {
                #expect(result.stderr == "error: \(expected)\n", "\(input)")
            }
        }
        #expect(snapshot(app.root) == before, "nothing ran")

        let withArguments = try runProcess(simulateChildExecutable, ["upgrade", app.root.path, "--plan", plan.path])
        #expect(withArguments.status == 2 && withArguments.killedBySignal == nil)
        #expect(withArguments.stderr.hasPrefix("error: backstage-simulate-child takes no arguments"), "\(withArguments.stderr)")
        #expect(snapshot(app.root) == before, "nothing ran")

        // The same request, readable, runs: the child is not refusing everything.
        let killed = try runSimulateChild(.upgrade(arguments: [app.root.path, "--plan", plan.path], crashAt: CrashPoint(.relocate, .committed)))
        #expect(killed.killedBySignal == SIGKILL, "\(killed.stderr)")
    }

    /// `upgradeChain` is `backstage upgrade CONTAINER --plan … --budget B --json` given as values:
    /// the same reports, the same store moved, the same kill at a crash point, the same refusals
    /// (a point the plans never reach: exit 2; a container that is not there: exit 3), nothing run
    /// when refused.
    @Test func theChildRunsAnUpgradeChainAsBackstageUpgradeRunsItsCommandLine() throws {
        let plan = #"{"name": "v1-to-v2", "version": "2", "steps": [{"relocate": {"from": "documents/Kiln.sqlite", "to": "applicationSupport/Kiln.sqlite"}}]}"#
        func app() throws -> (TestContainer, URL) {
            let app = try TestContainer()
            try makeWorkoutStore(app.documentsStore("Kiln.sqlite").main)
            let file = app.root.appending(path: "plan.json")
            try Data(plan.utf8).write(to: file)
            return (app, file)
        }
        let (viaChild, childPlan) = try app()
        let (viaCommand, commandPlan) = try app()
        let chain = SimulateChildRequest.UpgradeChain(container: viaChild.root.path, plans: [childPlan.path], budget: 2, json: true)
        let child = try runSimulateChild(.upgradeChain(chain))
        let command = try runProcess(backstageExecutable, ["upgrade", viaCommand.root.path, "--plan", commandPlan.path, "--budget", "2", "--json"])
        #expect(child.status == 0 && command.status == 0, "\(child.stderr) \(command.stderr)")
        struct Report: Decodable, Equatable { var plan: String; var steps: [Step]; struct Step: Decodable, Equatable { var description: String; var outcome: String } }
        let reports = try JSONDecoder().decode([Report].self, from: Data(child.stdout.utf8))
        #expect(reports == (try JSONDecoder().decode([Report].self, from: Data(command.stdout.utf8))))
        #expect(reports.first?.steps.first?.outcome == "done")
        for app in [viaChild, viaCommand] {
            #expect(FileManager.default.fileExists(atPath: app.supportStore("Kiln.sqlite").main.path))
            #expect(!FileManager.default.fileExists(atPath: app.documentsStore("Kiln.sqlite").main.path))
        }

        let (killedApp, killedPlan) = try app()
        var killedChain = chain
        killedChain.container = killedApp.root.path
        killedChain.plans = [killedPlan.path]
        let killed = try runSimulateChild(.upgradeChain(killedChain, crashAt: CrashPoint(.relocate, .committed)))
        #expect(killed.killedBySignal == SIGKILL, "\(killed.stderr)")

        let (refusedApp, refusedPlan) = try app()
        var refusedChain = chain
        refusedChain.container = refusedApp.root.path
        refusedChain.plans = [refusedPlan.path]
        let before = snapshot(refusedApp.root)
        let unreachable = try runSimulateChild(.upgradeChain(refusedChain, crashAt: CrashPoint(.split, .copied)))
        #expect(unreachable.status == 2 && unreachable.killedBySignal == nil)
        #expect(unreachable.stderr.contains("the crash point split:copied@1 is not a boundary these plans reach"), "\(unreachable.stderr)")
        refusedChain.container = refusedApp.root.appending(path: "absent").path
        // What `upgrade`'s parser refuses, refused in its words: no plan, a budget of 0.
        var noPlan = refusedChain
        noPlan.plans = []
        let planless = try runSimulateChild(.upgradeChain(noPlan))
        #expect(planless.status == 2 && planless.stderr == "error: Missing --plan FILE.\n", "\(planless.stderr)")
        var noBudget = refusedChain
        noBudget.budget = 0
        let budgetless = try runSimulateChild(.upgradeChain(noBudget))
        #expect(budgetless.status == 2 && budgetless.stderr == "error: --budget must be more than 0 seconds.\n")
        let missing = try runSimulateChild(.upgradeChain(refusedChain))
        #expect(missing.status == 3 && missing.stderr.contains("absent is not a folder"), "\(missing.stderr)")
        #expect(snapshot(refusedApp.root) == before, "nothing ran")
    }
}
