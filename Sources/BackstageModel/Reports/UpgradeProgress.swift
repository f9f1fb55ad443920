import BackstageSystem
import Foundation

/// How fast each kind of work goes, to turn bytes into seconds for an estimate.
///
/// The defaults were measured on a 2-core Linux machine (see docs/performance.md);
/// set your own from a benchmark on your devices.
///
/// The defaults were measured with `backstage bench --from v1 --to v4 --sizes 10MB,...,1GB`
/// (release build, 2-core Linux VM, ext4), which prints each step's estimate beside its time.
/// A step costs a fixed part plus `bytes / rate`.
public struct Throughput: Sendable, Hashable, Codable {
    /// Copy across file systems (copy, fsync, verify, remove the source), bytes per second.
    public var copy: Double = 500e6
    /// Split (rows rewritten into new files, fsynced; external data moved by one rename), bytes of
    /// the database (and its `-wal`) per second; its support folder counts too when a target is on
    /// another file system, where its files are copied. 240 MB/s at 90 MB, 290–340 MB/s at 450 MB
    /// measured (the Notes store of the 200 MB and 1 GB fixtures).
    public var split: Double = 300e6
    /// What a split costs whatever its size (the plan, two new stores, their fsyncs, the source's
    /// removal), in seconds.
    public var splitSetup: Double = 0.05
    /// Schema migration, bytes of the store per second. A migration's cost depends on its SQL:
    /// adding a column and indexing one table of the Notes store ran at about 9 GB/s; this default
    /// leaves room for a migration that rewrites more of the store.
    public var migrate: Double = 8e9
    /// A rename and its locking, in seconds, plus `bytes / renameRate` (the checkpoint of the
    /// `-wal`, the support folder): 8 ms at 10 MB, 38–52 ms at 1 GB measured.
    public var rename: Double = 0.009
    /// See ``rename``, bytes per second.
    public var renameRate: Double = 22e9
    /// What every other step costs whatever its size (locks, journal, fsyncs, a quarantine's scan), in seconds.
    public var perStep: Double = 0.012
    /// What a migration's statements cost, by kind, per row and per byte of the table each names
    /// (see ``MigrationRates``); ``migrate`` is used only when the store cannot be read.
    public var migrationRates = MigrationRates()
    /// What a Core Data migration's statements cost (see ``CoreDataMigrationRates``).
    public var coreDataMigrationRates = CoreDataMigrationRates()

    public init() {}

    /// What each kind of statement of a Core Data migration costs, per row and per byte of the source
    /// table it reads. Measured with `backstage bench --catalog` (release, warm, 2 cores, 4 KiB pages)
    /// on a store of 1.5 million small rows with two indexes and one of 11,000 rows of 17 KB blobs,
    /// 10 MB and 200 MB: the step within 15 % of these at both sizes.
    public struct CoreDataMigrationRates: Sendable, Hashable, Codable {
        /// A table's rows copied into its new table (`INSERT … SELECT`), with their share of the
        /// commit and checkpoint that write them out: 1.0 s for 1.5 million rows of 117 MB, 1.6 s for
        /// 197 MB of blobs.
        public var copy = MigrationRates.Rate(secondsPerRow: 0.45e-6, bytesPerSecond: 120e6)
        /// An index built on a new table, per row of the table and byte of it scanned: 0.8–1.6 s
        /// for 1.5 million rows.
        public var index = MigrationRates.Rate(secondsPerRow: 0.75e-6, bytesPerSecond: 1.2e9)
        /// An ordered relationship's positions numbered where the source had none (the window over
        /// the source, the temporary table, a lookup per row copied): 2.8 s for 1.5 million rows.
        public var positions = MigrationRates.Rate(secondsPerRow: 1.9e-6, bytesPerSecond: .infinity)
        /// A source table dropped, per byte of it and its indexes (SQLite built here with
        /// `SECURE_DELETE` writes zeros over every freed page): 0.6 s for 152 MB, 0.8 s for 197 MB.
        public var drop = MigrationRates.Rate(secondsPerRow: 0, bytesPerSecond: 250e6)

        public init() {}
    }

    /// What each kind of migration statement costs, per row and per byte of the table it names.
    /// Measured with the `sqlite3` shell (`synchronous=FULL`, WAL, 4 KiB pages) on tables of
    /// 10 MB–1 GB with small rows and with blobs; `backstage bench` compares them with the run.
    public struct MigrationRates: Sendable, Hashable, Codable {
        /// A cost per row plus a cost per byte.
        public struct Rate: Sendable, Hashable, Codable {
            public var secondsPerRow: Double
            public var bytesPerSecond: Double
            public init(secondsPerRow: Double, bytesPerSecond: Double) {
                self.secondsPerRow = secondsPerRow
                self.bytesPerSecond = bytesPerSecond
            }
        }
        /// Reading every row once: `ADD COLUMN … CHECK`.
        public var scan = Rate(secondsPerRow: 1.0e-6, bytesPerSecond: 1e9)
        /// Reading and sorting: `CREATE INDEX`, `REINDEX`.
        public var index = Rate(secondsPerRow: 2.0e-6, bytesPerSecond: 0.5e9)
        /// Reading and writing every row (and its indexes): `UPDATE`, `DELETE … WHERE`,
        /// `INSERT … SELECT`, `CREATE TABLE … AS`, `DROP COLUMN`, `VACUUM`.
        public var rewrite = Rate(secondsPerRow: 3.0e-6, bytesPerSecond: 0.2e9)
        /// Overwriting the freed pages: `DROP TABLE`, `DROP INDEX`, `DELETE` of every row.
        public var overwrite = Rate(secondsPerRow: 0, bytesPerSecond: 0.08e9)

        public init() {}
    }
}

/// The estimated cost of the pending steps of a plan, known before anything is touched.
public struct UpgradeEstimate: Sendable, Hashable, Codable {
    /// One pending step.
    public struct Step: Sendable, Hashable, Codable {
        public var index: Int
        public var description: String
        public var bytes: Int64
        public var seconds: Double

        package init(index: Int, description: String, bytes: Int64, seconds: Double) {
            self.index = index
            self.description = description
            self.bytes = bytes
            self.seconds = seconds
        }
    }
    /// The steps that will run; steps already done are not listed.
    public var steps: [Step]
    /// The launch budget the estimate is compared with, in seconds.
    public var budget: Double

    /// Bytes the pending steps read or write.
    public var bytes: Int64 { steps.reduce(0) { $0 + $1.bytes } }
    /// Estimated seconds for the pending steps.
    public var seconds: Double { steps.reduce(0) { $0 + $1.seconds } }
    /// True when the upgrade would outlast the launch budget: run it behind a progress screen,
    /// not on the launch path, or the system watchdog kills the app on every launch.
    public var exceedsBudget: Bool { seconds > budget }

    package init(steps: [Step], budget: Double) {
        self.steps = steps
        self.budget = budget
    }
}

/// Progress of an upgrade.
public struct UpgradeProgress: Sendable, Hashable {
    /// The index of the step in the plan.
    public var stepIndex: Int
    /// The step, as text.
    public var step: String
    /// The last boundary the step passed.
    public var phase: StepPhase
    /// Bytes done and to do in this step (0 when the step does not count bytes: a rename, a migration).
    public var bytesDone: Int64
    public var bytesTotal: Int64
    /// The whole run's fraction done, from 0 to 1, each step weighted by its estimated time: it
    /// only grows, and is 1.0 only in the last event before ``UpgradeEvent/finished(_:)``. Feed
    /// this to a progress bar.
    public var fractionDone: Double

    package init(
        stepIndex: Int, step: String, phase: StepPhase, bytesDone: Int64, bytesTotal: Int64, fractionDone: Double
    ) {
        self.stepIndex = stepIndex
        self.step = step
        self.phase = phase
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
        self.fractionDone = fractionDone
    }
}

/// What an upgrade did.
public struct UpgradeReport: Sendable, Hashable, Codable {
    /// One step of the plan.
    public struct Step: Sendable, Hashable, Codable {
        /// What became of a step.
        public enum Outcome: String, Sendable, Hashable, Codable, CustomStringConvertible {
            /// It ran and changed the container.
            case done
            /// `needsUpgrade` found nothing to do for it.
            case skipped
            /// A schema migration whose every migration was already applied.
            case upToDate = "up to date"

            public var description: String { rawValue }
        }

        public var index: Int
        public var description: String
        public var outcome: Outcome
        public var seconds: Double
        /// Why a skipped or up-to-date step had nothing to do: `already done`, `absent: fresh
        /// install`, `up to date`, `nothing to quarantine`...; nil for a step that ran.
        public var reason: String?

        public init(index: Int, description: String, outcome: Outcome, seconds: Double, reason: String? = nil) {
            self.index = index
            self.description = description
            self.outcome = outcome
            self.seconds = seconds
            self.reason = reason
        }
    }
    public var plan: String
    public var estimate: UpgradeEstimate
    public var steps: [Step] = []
    /// Stores moved, files quarantined and interrupted steps recovered along the way.
    public var relocation = RelocationReport()
    /// What the run could not account for, one sentence each: internal files left in Documents
    /// that no step names (a store the plan missed, with the closest location it names), a store
    /// the plan migrates missing while its other stores are there. When not empty, the run did
    /// not record the plan's version as reached: correct the plan and run it again.
    public var problems: [String] = []
    public var seconds: Double = 0

    package init(
        plan: String, estimate: UpgradeEstimate, steps: [Step] = [], problems: [String] = [], seconds: Double = 0
    ) {
        self.plan = plan
        self.estimate = estimate
        self.steps = steps
        self.problems = problems
        self.seconds = seconds
    }
}

/// An event of an upgrade stream: the estimate first, before anything is touched, then progress,
/// then the report.
public enum UpgradeEvent: Sendable {
    case planned(UpgradeEstimate)
    case progress(UpgradeProgress)
    case finished(UpgradeReport)
}
