import BackstageHarness
import Testing

/// The progress line of `simulate` and `bench`: what a user waiting minutes reads on the terminal.
@Suite struct ProgressTextTests {
    @Test func theLineSaysRunsDoneOfAllWhatRunsAndTheTimeLeftFromTheRunsSoFar() {
        var text = ProgressText(label: "simulate", total: 40, unit: "runs")
        text.detail = "2 MB wal-pending · relocate:copying@1 · resuming"
        // 10 runs in 100 s: 10 s each, 30 left, 4 s into the 11th.
        for second in stride(from: 10.0, through: 100, by: 10) { text.finishedOne(at: second) }
        #expect(text.secondsLeft(elapsed: 104) == 296)
        let line = text.line(elapsed: 104)
        #expect(line.hasPrefix("simulate [█████░░░░░░░░░░░░░░░] 10/40 runs · "), "\(line)")
        #expect(line.contains("2 MB wal-pending · relocate:copying@1 · resuming"))
        #expect(line.hasSuffix(" · 4 min 56 s left"), "\(line)")
    }

    @Test func beforeTheFirstRunEndsTheLineSaysItIsEstimating() {
        var text = ProgressText(label: "simulate", total: 3, unit: "runs")
        text.detail = "1 MB clean · generating the fixture"
        #expect(text.secondsLeft(elapsed: 30) == nil)
        #expect(text.line(elapsed: 30).hasSuffix("0/3 runs · 1 MB clean · generating the fixture · estimating the time left"))
    }

    @Test func theTimeLeftNeverGoesBelowZeroAndAFinishedRunSaysTheTimeItTook() {
        var text = ProgressText(label: "bench", total: 2, unit: "runs")
        text.finishedOne(at: 5)
        #expect(text.secondsLeft(elapsed: 60) == 0, "a run slower than the others so far")
        text.finishedOne(at: 70)
        #expect(text.line(elapsed: 70).hasSuffix("2/2 runs · 0 s left"))
        let unknown = ProgressText(label: "bench", total: nil, unit: "runs", detail: "writing a store of 10 GB")
        #expect(unknown.line(elapsed: 3725) == "bench · writing a store of 10 GB · 1 h 02 min so far")
    }

    @Test func aLongDetailIsCutToTheTerminalsWidth() {
        var text = ProgressText(label: "simulate", total: 4, unit: "runs")
        text.detail = String(repeating: "x", count: 500)
        let line = text.line(elapsed: 1, width: 80)
        #expect(line.count <= 80, "\(line.count) characters")
        #expect(line.contains("x…") && line.hasSuffix("estimating the time left"))
    }

    @Test func aSimulationsStageNamesTheFixtureTheCrashPointAndWhatItDoes() {
        let resuming = SimulationProgress(
            runsDone: 3, runsTotal: 9, size: 2_000_000, state: .walPending, run: "relocate:copying@1", stage: .resuming)
        #expect(resuming.detail == "2 MB wal-pending · relocate:copying@1 · resuming")
        let fixture = SimulationProgress(runsDone: 0, runsTotal: 9, size: 2_000_000, state: .clean, run: nil, stage: .generatingFixture)
        #expect(fixture.detail == "2 MB clean · generating the fixture")
        let plain = SimulationProgress(runsDone: 0, runsTotal: 1, size: 2_000_000, state: .clean, run: nil, stage: .interrupting)
        #expect(plain.detail == "2 MB clean · no crash · running")
    }
}
