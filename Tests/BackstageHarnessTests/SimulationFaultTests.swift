import Backstage
import BackstageHarness
import Foundation
import Testing

/// A run's fault (how it was interrupted, or the older build launched after it) is a typed value in
/// Swift and its label in JSON: a report written, merged and read back says the same, and a report
/// written before the fault was typed is still read.
@Suite struct SimulationFaultTests {
    static let faults: [SimulationRun.Fault] = [
        .crashPoint(CrashPoint(.relocate, .committed, occurrence: 2)),
        .crashPoint(CrashPoint(.migrateSchema, .migrating)),
        .randomKill(milliseconds: 0),
        .randomKill(milliseconds: 1234),
        .powerCut(PowerCut(after: 0, losesUnsyncedWrites: false)),
        .powerCut(PowerCut(after: 53, losesUnsyncedWrites: true, lastOperation: "fsync Library/Application Support")),
        .powerCut(PowerCut(after: 7, losesUnsyncedWrites: false, lastOperation: "rename a (1).sqlite → b, c.sqlite")),
        .powerCut(PowerCut(after: 8, losesUnsyncedWrites: true, lastOperation: "no change to the disk")),
        .downgrade(to: "v3"),
    ]

    static func run(_ fault: SimulationRun.Fault?) -> SimulationRun {
        SimulationRun(
            from: "v1", to: "v4", size: 200_000, state: .walPending, crashPoint: fault, crashed: fault != nil, reruns: 1,
            seconds: 0.5, exceedsBudget: false, failures: [])
    }

    @Test func everyFaultRoundTripsThroughAReportAsItsLabel() throws {
        let runs = (Self.faults + [nil]).map(Self.run)
        let report = SimulationReport(
            app: "Notes", catalog: "sha256:0", seed: 1, command: ["--from", "v1"], shard: Shard(index: 1, count: 1),
            units: runs.count, unitsRun: Array(runs.indices), runs: runs, seconds: 1)
        let json = try JSONEncoder().encode(report)
        let read = try JSONDecoder().decode(SimulationReport.self, from: json)
        #expect(read.runs == runs)
        #expect(read.crashPointsTried == report.crashPointsTried && read.crashPointsTried.count == Self.faults.count)
        #expect(read.powerLossStates == 4)
        // Each label is one JSON string, the text reports print.
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        let labels = (object["runs"] as? [[String: Any]])?.map { $0["crashPoint"] as? String }
        #expect(labels == Self.faults.map(\.description) + [nil])
        #expect(labels?.first == "relocate:committed@2" && labels?[3] == "random:1234ms" && labels?[8] == "downgrade-to-v3")
        #expect(labels?[5] == "power cut @53 (after fsync Library/Application Support), writes lost")
        for fault in Self.faults { #expect(SimulationRun.Fault(fault.description) == fault, "\(fault)") }
    }

    @Test func aRunOfAReportWrittenBeforeTheFaultWasTypedIsRead() throws {
        // As written before: the label and a separate `interruption`; a crash point without @N.
        let old = #"""
            [{"from": "v1", "to": "v4", "size": 1000, "state": "clean", "crashPoint": "split:verified", "interruption": "crashPoint",
              "crashed": true, "reruns": 1, "seconds": 0.5, "exceedsBudget": false, "failures": []},
             {"from": "v1", "to": "v4", "size": 1000, "state": "clean", "crashPoint": "random:35ms", "interruption": "randomKill",
              "crashed": true, "reruns": 1, "seconds": 0.5, "exceedsBudget": false, "failures": []},
             {"from": "v1", "to": "v4", "size": 1000, "state": "clean", "crashPoint": "power cut @12 (after rename Notes.sqlite-tmp → Notes.sqlite), writes lost",
              "interruption": "powerCut", "crashed": true, "reruns": 1, "seconds": 0.5, "exceedsBudget": false, "failures": []},
             {"from": "v3", "to": "v4", "size": 1000, "state": "clean", "crashPoint": "downgrade-to-v3",
              "crashed": false, "reruns": 1, "seconds": 0.5, "exceedsBudget": false, "failures": []}]
            """#
        let runs = try JSONDecoder().decode([SimulationRun].self, from: Data(old.utf8))
        #expect(
            runs.map(\.crashPoint) == [
                .crashPoint(CrashPoint(.split, .verified)), .randomKill(milliseconds: 35),
                .powerCut(
                    PowerCut(
                        after: 12, losesUnsyncedWrites: true, lastOperation: "rename Notes.sqlite-tmp → Notes.sqlite")),
                .downgrade(to: "v3"),
            ])
        #expect(CostBreakdown(runs.map { var run = $0; run.cost = RunCost(upgrade: 1); return run }).kinds.map(\.kind)
                == ["crash point", "random kill", "power cut", "downgrade"])
    }

    @Test(arguments: ["relocate:comitted@1", "random:12", "random:xms", "power cut @", "downgrade-to-", ""])
    func aLabelThatIsNoFaultIsRefusedNamingIt(label: String) throws {
        let json = #"{"from": "v1", "to": "v4", "size": 1000, "state": "clean", "crashPoint": "\#(label)", "crashed": true, "reruns": 1, "seconds": 0.5, "exceedsBudget": false, "failures": []}"#
        #expect(SimulationRun.Fault(label) == nil)
        let error = #expect(throws: DecodingError.self) { try JSONDecoder().decode(SimulationRun.self, from: Data(json.utf8)) }
        guard case .dataCorrupted(let context) = error else { Issue.record("\(String(describing: error))"); return }
        #expect(context.debugDescription.hasPrefix("\(label) is not a crash point (kind:phase@N), random:Nms"))
    }
}
