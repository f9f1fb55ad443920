import Foundation

/// A "Workouts" app: `Documents/Workout.sqlite` (WAL) with workouts, their sets and a log.
public func makeWorkoutStore(_ url: URL, workouts: Int = 19) throws {
    let script = """
        import sqlite3, sys
        c = sqlite3.connect(sys.argv[1], isolation_level=None)
        c.execute("pragma journal_mode=wal")
        c.execute("create table workout(id integer primary key, name text, \\"commit\\" text)")
        c.execute("create table exercise(id integer primary key, workout integer references workout(id), reps integer)")
        c.execute("create table log(id integer primary key, line text)")
        c.execute("begin")
        for i in range(int(sys.argv[2])):
            c.execute("insert into workout(name, \\"commit\\") values (?, 'COMMIT;')", ("run %d" % i,))
            c.execute("insert into exercise(workout, reps) values (?, ?)", (i + 1, i * 3))
            c.execute("insert into log(line) values ('started')")
        c.execute("commit")
        c.close()
        """
    let result = try PythonSQLite.run(script, [url.path, "\(workouts)"])
    guard result.status == 0 else { throw Failure("cannot make the Workouts store: \(result.stderr)") }
}
