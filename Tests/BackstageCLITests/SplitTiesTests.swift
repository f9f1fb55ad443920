import BackstageTestSupport
import Foundation
import Testing

/// Issue 54: a split sent `thumbnail` (`REFERENCES podcast(id)`) to a store without `podcast`, and
/// `catalog add-version`, `catalog check`, `catalog lint` and `simulate` all passed; the app's first
/// insert failed (`no such table: main.podcast`). Each way a schema ties two tables together, split
/// apart, is now refused by lint and add-version (exit 1, naming both tables and both stores) and by
/// the upgrade before anything is written (the container byte-identical); kept together, it passes.
@Suite struct SplitTiesTests {
    /// A Feed store tying its tables together every way a schema can: a foreign key (thumbnail →
    /// podcast), a trigger (on episode, writing play), a view (tag_names, reading tag and tagging)
    /// and a full-text table reading another's content (note_search, content='note').
    static let feed = """
        import sqlite3, sys
        c = sqlite3.connect(sys.argv[1])
        c.executescript('''
        create table podcast(id integer primary key, title text);
        create table thumbnail(id integer primary key, podcast_id integer references podcast(id), bytes blob);
        create table episode(id integer primary key, title text);
        create table play(id integer primary key, episode integer, at integer);
        create trigger episode_forgotten after delete on episode begin delete from play where episode = old.id; end;
        create table tag(id integer primary key, name text);
        create table tagging(tag integer, item integer);
        create view tag_names as select tagging.item, tag.name from tagging join tag on tag.id = tagging.tag;
        create table note(id integer primary key, body text);
        create virtual table note_search using fts5(body, content='note', content_rowid='id');
        ''')
        for i in range(1, 21):
            c.execute("insert into podcast values (?, ?)", (i, "show %d" % i))
            c.execute("insert into thumbnail values (?, ?, ?)", (i, i, b"png"))
            c.execute("insert into episode values (?, ?)", (i, "episode %d" % i))
            c.execute("insert into play values (?, ?, ?)", (i, i, 1000 + i))
            c.execute("insert into tag values (?, ?)", (i, "tag %d" % i))
            c.execute("insert into tagging values (?, ?)", (i, i))
            c.execute("insert into note values (?, ?)", (i, "note %d" % i))
        c.execute("insert into note_search(note_search) values ('rebuild')")
        c.commit()
        """

    static let tables = ["podcast", "thumbnail", "episode", "play", "tag", "tagging", "note", "note_search"]

    /// The split of `documents/Feed.sqlite`: `cache` to `caches/Cache.sqlite`, `discard` discarded,
    /// every other table to `applicationSupport/Feed.sqlite`.
    static func plan(cache: [String], discard: [String] = []) -> String {
        func list(_ names: [String]) -> String { names.map { "\"\($0)\"" }.joined(separator: ", ") }
        let feed = tables.filter { !cache.contains($0) && !discard.contains($0) }
        return """
            {"name": "v1-to-v2", "steps": [{"split": {"store": "documents/Feed.sqlite", "into": [
              {"store": "applicationSupport/Feed.sqlite", "tables": [\(list(feed))]},
              {"store": "caches/Cache.sqlite", "tables": [\(list(cache))]}], "discard": [\(list(discard))]}}]}
            """
    }

    /// Each split that breaks a tie: the tables it moves to the cache (or discards), the table the
    /// finding is about, and the sentence.
    static let separations: [(cache: [String], discard: [String], table: String, sentence: String)] = [
        (
            ["thumbnail"], [], "thumbnail",
            "table thumbnail references podcast (a foreign key), but the split puts thumbnail in caches/Cache.sqlite "
                + "and podcast in applicationSupport/Feed.sqlite: the app's first write to thumbnail would fail "
                + "(no such table: main.podcast); keep them in one store, or discard both"
        ),
        (
            ["play"], [], "episode",
            "trigger episode_forgotten on table episode touches table play, but the split puts episode in "
                + "applicationSupport/Feed.sqlite and play in caches/Cache.sqlite: the app's first write to episode "
                + "would fail (no such table: main.play); keep them in one store, or discard both"
        ),
        (
            ["tag"], [], "tag",
            "view tag_names reads tables tag and tagging, but the split puts tag in caches/Cache.sqlite and tagging "
                + "in applicationSupport/Feed.sqlite: the view could be created in neither store and would be lost; "
                + "keep them in one store, or discard both"
        ),
        (
            ["note_search"], [], "note_search",
            "full-text table note_search indexes the content of table note (content=), but the split puts "
                + "note_search in caches/Cache.sqlite and note in applicationSupport/Feed.sqlite: a search of "
                + "note_search would fail (no such table: main.note); keep them in one store, or discard both"
        ),
        (
            ["note", "note_search"], ["podcast"], "thumbnail",
            "table thumbnail references podcast (a foreign key), but the split puts thumbnail in "
                + "applicationSupport/Feed.sqlite and discards podcast: the app's first write to thumbnail would "
                + "fail (no such table: main.podcast); keep them in one store, or discard both"
        ),
    ]

    /// The Feed catalog (v1 captured from the store) with the plan beside it, and, unless
    /// `addingVersion`, a v2 reached by it in the manifest (its stores v1's: lint reads only the plan).
    static func catalog(plan: String, addingVersion: Bool = true) throws -> TemporaryDirectory {
        let scratch = try capturedCatalog("Feed", storeMadeBy: feed)
        let catalog = scratch.url.appending(path: "Feed")
        try Data(plan.utf8).write(to: scratch.url.appending(path: "v1-to-v2.json"))
        guard addingVersion else { return scratch }
        try FileManager.default.createDirectory(at: catalog.appending(path: "plans"), withIntermediateDirectories: true)
        try Data(plan.utf8).write(to: catalog.appending(path: "plans/v1-to-v2.json"))
        let added = try PythonSQLite.run(
            """
            import json, sys
            m = json.load(open(sys.argv[1]))
            v2 = dict(m["versions"][0]); v2["name"] = "v2"; v2["plan"] = "plans/v1-to-v2.json"
            m["versions"].append(v2)
            json.dump(m, open(sys.argv[1], "w"), indent=1)
            """, [catalog.appending(path: "catalog.json").path])
        #expect(added.status == 0, "\(added.stderr)")
        return scratch
    }

    /// A container holding the Feed store in Documents, the plan beside it.
    static func container(plan: String) throws -> (TemporaryDirectory, URL) {
        let root = try TemporaryDirectory()
        let documents = root.url.appending(path: "Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        let made = try PythonSQLite.run(feed, [documents.appending(path: "Feed.sqlite").path])
        #expect(made.status == 0, "\(made.stderr)")
        let planFile = root.url.appending(path: "v1-to-v2.json")
        try Data(plan.utf8).write(to: planFile)
        return (root, planFile)
    }

    @Test(arguments: 0..<separations.count)
    func aSplitSeparatingTiedTablesIsRefusedByLintCheckAndAddVersion(_ index: Int) throws {
        let (cache, discard, table, sentence) = Self.separations[index]
        let scratch = try Self.catalog(plan: Self.plan(cache: cache, discard: discard))
        let finding = "documents/Feed.sqlite, split, table \(table): \(sentence)"
        let lint = try runProcess(backstageExecutable, ["catalog", "lint", "Feed"], currentDirectory: scratch.url)
        #expect(lint.status == 1)
        #expect(lint.stdout == "v2: error: \(finding)\n", "\(lint.stdout) \(lint.stderr)")
        let check = try runProcess(backstageExecutable, ["catalog", "check", "Feed"], currentDirectory: scratch.url)
        #expect(check.status == 1)
        #expect(check.stdout.contains("v2: \(finding)"), "\(check.stdout) \(check.stderr)")

        let fresh = try Self.catalog(plan: Self.plan(cache: cache, discard: discard), addingVersion: false)
        let manifest = try Data(contentsOf: fresh.url.appending(path: "Feed/catalog.json"))
        let added = try runProcess(
            backstageExecutable, ["catalog", "add-version", "Feed", "v2", "--plan", "v1-to-v2.json"],
            currentDirectory: fresh.url)
        #expect(added.status == 1)
        #expect(added.stdout.contains("v2: \(finding)"), "\(added.stdout) \(added.stderr)")
        #expect(try Data(contentsOf: fresh.url.appending(path: "Feed/catalog.json")) == manifest)
    }

    @Test(arguments: 0..<separations.count)
    func aSplitSeparatingTiedTablesIsRefusedBeforeAnythingIsWritten(_ index: Int) throws {
        let (cache, discard, _, sentence) = Self.separations[index]
        let (root, plan) = try Self.container(plan: Self.plan(cache: cache, discard: discard))
        let store = root.url.appending(path: "Documents/Feed.sqlite").path
        let before = snapshot(root.url)
        for extra in [["--dry-run"], []] {
            let result = try runProcess(backstageExecutable, ["upgrade", root.path, "--plan", plan.path] + extra)
            #expect(result.status == 3, "\(extra) \(result.stdout)")
            #expect(
                result.stderr
                    == "error: the split of \(store) would separate tables tied together: \(sentence); "
                    + "nothing was changed: correct the plan\n", "\(extra)")
            #expect(snapshot(root.url) == before, "\(extra)")
        }
        #expect(FileManager.default.fileExists(atPath: store))
        #expect(!FileManager.default.fileExists(atPath: root.url.appending(path: "Library/Caches/Cache.sqlite").path))
    }

    /// A new user's trial: a relocation then a split across a foreign key, the store's last rows only
    /// in its `-wal` (the common case). The dry run said "upgrade needed", and the run moved the store
    /// before the split refused. Both refuse before anything moves: the checkpointed schema already
    /// holds the tie.
    @Test func aTieIsRefusedUpFrontWhenTheLastRowsAreOnlyInTheWAL() throws {
        let split = Self.plan(cache: ["thumbnail"])
        let plan = split.replacingOccurrences(
            of: #"{"name": "v1-to-v2", "steps": ["#,
            with: #"{"name": "v1-to-v2", "steps": [{"relocate": {"from": "documents/Feed.sqlite", "to": "applicationSupport/Old.sqlite"}}, "#
        ).replacingOccurrences(of: #""store": "documents/Feed.sqlite""#, with: #""store": "applicationSupport/Old.sqlite""#)
        let (root, planFile) = try Self.container(plan: plan)
        let store = root.url.appending(path: "Documents/Feed.sqlite")
        let pending = try PythonSQLite.run(
            """
            import os, sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute("pragma journal_mode = wal")
            c.execute("pragma wal_checkpoint(truncate)")
            c.execute("insert into podcast values (100, 'only in the wal')")
            c.commit()
            os._exit(0)
            """, [store.path])
        #expect(pending.status == 0, "\(pending.stderr)")
        #expect(try Data(contentsOf: URL(filePath: store.path + "-wal")).count > 0, "rows only in the -wal")
        let before = snapshot(root.url)
        let future = root.url.appending(path: "Library/Application Support/Old.sqlite").path
        for extra in [["--dry-run"], []] {
            let result = try runProcess(backstageExecutable, ["upgrade", root.path, "--plan", planFile.path] + extra)
            #expect(result.status == 3, "\(extra) \(result.stdout) \(result.stderr)")
            #expect(
                result.stderr
                    == "error: the split of \(future) would separate tables tied together: \(Self.separations[0].sentence); "
                    + "nothing was changed: correct the plan\n", "\(extra)")
            #expect(snapshot(root.url) == before, "nothing moved: \(extra)")
        }
    }

    /// A store whose schema is still in its `-wal` (the app was killed before a checkpoint): the
    /// preflight reads it as of its last checkpoint and leaves the split to find the tie itself,
    /// under the store's lock, before it writes a target. The store keeps every row; no target,
    /// no journal is left.
    @Test func aTieOnlyTheWALHoldsIsRefusedByTheSplitItself() throws {
        let (root, plan) = try Self.container(plan: Self.plan(cache: ["thumbnail"]))
        let store = root.url.appending(path: "Documents/Feed.sqlite")
        try FileManager.default.removeItem(at: store)
        let made = try PythonSQLite.run(
            """
            import os, sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            c.execute("pragma journal_mode = wal")
            c.execute("create table podcast(id integer primary key, title text)")
            c.commit()
            c.execute("pragma wal_checkpoint(truncate)")
            for name in ["episode", "play", "tag", "tagging", "note"]:
                c.execute("create table %s(id integer primary key)" % name)
            c.execute("create virtual table note_search using fts5(body)")
            c.execute("create table thumbnail(id integer primary key, podcast_id integer references podcast(id))")
            c.execute("insert into podcast values (1, 'show')")
            c.execute("insert into thumbnail values (1, 1)")
            c.commit()
            os._exit(0)
            """, [store.path])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(try Data(contentsOf: URL(filePath: store.path + "-wal")).count > 0)
        let result = try runProcess(backstageExecutable, ["upgrade", root.path, "--plan", plan.path])
        #expect(result.status == 3)
        #expect(
            result.stderr
                == "error: the split of \(store.path) would separate tables tied together: \(Self.separations[0].sentence); "
                + "nothing was changed: correct the plan\n")
        let rows = try PythonSQLite.run(
            """
            import sqlite3, sys
            c = sqlite3.connect(sys.argv[1])
            print(c.execute("select count(*) from thumbnail join podcast on podcast.id = thumbnail.podcast_id").fetchone()[0])
            """, [store.path])
        #expect(rows.stdout == "1\n", "\(rows.stderr)")
        #expect(!FileManager.default.fileExists(atPath: root.url.appending(path: "Library/Caches/Cache.sqlite").path))
        #expect(paths(under: root.url, containing: "journal.json").isEmpty)
    }

    /// The tied tables kept together (podcast with its thumbnails in the cache; a child discarded
    /// while its parent stays) pass lint, and the split runs, every row where the plan put it.
    @Test func aSplitKeepingTiedTablesTogetherPasses() throws {
        let plan = Self.plan(cache: ["podcast", "thumbnail"], discard: [])
        let scratch = try Self.catalog(plan: plan)
        let lint = try runProcess(backstageExecutable, ["catalog", "lint", "Feed"], currentDirectory: scratch.url)
        #expect(lint.status == 0, "\(lint.stdout) \(lint.stderr)")
        let discarding = try Self.catalog(plan: Self.plan(cache: ["tag", "tagging"], discard: ["thumbnail"]))
        let lintDiscarding = try runProcess(
            backstageExecutable, ["catalog", "lint", "Feed"], currentDirectory: discarding.url)
        #expect(lintDiscarding.status == 0, "\(lintDiscarding.stdout) \(lintDiscarding.stderr)")

        let (root, planFile) = try Self.container(plan: plan)
        let result = try runProcess(backstageExecutable, ["upgrade", root.path, "--plan", planFile.path])
        #expect(result.status == 0, "\(result.stderr)")
        let rows = try PythonSQLite.run(
            """
            import sqlite3, sys
            cache = sqlite3.connect(sys.argv[1]); feed = sqlite3.connect(sys.argv[2])
            cache.execute("pragma foreign_keys = on")
            cache.execute("insert into thumbnail(podcast_id, bytes) values (3, x'00')")
            print(cache.execute("select count(*) from thumbnail join podcast on podcast.id = thumbnail.podcast_id").fetchone()[0])
            print(feed.execute("select count(*) from tag_names").fetchone()[0])
            print(feed.execute("select count(*) from note_search where note_search match 'note'").fetchone()[0])
            """,
            [
                root.url.appending(path: "Library/Caches/Cache.sqlite").path,
                root.url.appending(path: "Library/Application Support/Feed.sqlite").path,
            ])
        #expect(rows.stdout == "21\n20\n20\n", "\(rows.stderr)")
    }

    /// `simulate` checks every store's foreign keys after the upgrade: a migration run without
    /// foreign-key checks that renumbers the parents leaves every thumbnail dangling, and fails the
    /// run naming the table and the store; the dangling thumbnails the captured store already had
    /// (fixtures carry the same share) fail nothing.
    @Test(.timeLimit(.minutes(10))) func simulateCatchesForeignKeysAPlanBreaks() throws {
        let scratch = try capturedCatalog(
            "Pods",
            storeMadeBy: """
                import sqlite3, sys
                c = sqlite3.connect(sys.argv[1])
                c.execute("create table podcast(id integer primary key, title text)")
                c.execute("create table thumbnail(id integer primary key, podcast_id integer references podcast(id), bytes blob)")
                for i in range(1, 41):
                    c.execute("insert into podcast values (?, ?)", (i, "show %d" % i))
                    c.execute("insert into thumbnail values (?, ?, ?)", (i, i if i % 10 else 999, b"png"))
                c.commit()
                """)
        let catalog = scratch.url.appending(path: "Pods")
        let added = try PythonSQLite.run(
            """
            import json, sys
            m = json.load(open(sys.argv[1]))
            v2 = json.loads(json.dumps(m["versions"][0])); v2["name"] = "v2"
            v2["stores"][0]["location"] = "applicationSupport/Pods.sqlite"
            m["versions"].append(v2)
            json.dump(m, open(sys.argv[1], "w"), indent=1)
            """, [catalog.appending(path: "catalog.json").path])
        #expect(added.status == 0, "\(added.stderr)")
        func simulate(_ sql: String) throws -> ProcessResult {
            let plan = scratch.url.appending(path: "plan.json")
            let json =
                #"{"name": "v1-to-v2", "steps": [{"relocate": {"from": "documents/Pods.sqlite", "#
                + #""to": "applicationSupport/Pods.sqlite"}}, {"migrateSchema": {"store": "applicationSupport/Pods.sqlite", "#
                + #""foreignKeyChecks": "none", "migrations": [{"id": "v2", "sql": "\#(sql)"}]}}]}"#
            try Data(json.utf8).write(to: plan)
            return try runProcess(
                backstageExecutable,
                [
                    "simulate", "--catalog", catalog.path, "--from", "v1", "--to", "v2", "--sizes", "200KB",
                    "--states", "clean", "--crash-points", "none", "--plan", plan.path,
                ], currentDirectory: scratch.url)
        }
        let harmless = try simulate("UPDATE podcast SET title = title || '!'")
        #expect(harmless.status == 0, "\(harmless.stdout) \(harmless.stderr)")
        let renumbering = try simulate("UPDATE podcast SET id = id + 1000000")
        #expect(renumbering.status == 1)
        #expect(
            renumbering.stdout.contains(
                "rows of thumbnail in applicationSupport/Pods.sqlite point at no row of their parent (PRAGMA foreign_key_check)"),
            "\(renumbering.stdout) \(renumbering.stderr)")
    }
}
