import Foundation

/// Real application schemas to practise on: every `.sql` of `../shared/schemas/` (schemas other
/// projects wrote; more of them are tried by the acceptance checks), the Workouts app of issue 26,
/// and a zoo of the shapes SQLite accepts that tidy schemas lack.
public struct RealSchema: Sendable, CustomStringConvertible {
    public var name: String
    public var sql: String
    /// A table a v2 migration adds a column and an index to.
    public var migratedTable: String

    public var description: String { name }

    /// The shared schemas (each migrating its first table), then Workouts and the zoo.
    public static var all: [RealSchema] {
        let folder = SharedStores.folder.deletingLastPathComponent().appending(path: "schemas")
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".sql") }.sorted()
        let shared = files.compactMap { file -> RealSchema? in
            guard let sql = try? String(contentsOf: folder.appending(path: file), encoding: .utf8) else { return nil }
            return RealSchema(name: String(file.dropLast(4)), sql: sql, migratedTable: "")
        }
        return shared + [workouts, zoo]
    }

    /// Issue 26's Workouts app: foreign keys, an index, a trigger, a WITHOUT ROWID table, blobs, FTS5.
    public static let workouts = RealSchema(name: "workouts", sql: """
CREATE TABLE athlete (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, photo BLOB);
CREATE TABLE workout (id INTEGER PRIMARY KEY, athleteId INTEGER NOT NULL REFERENCES athlete(id),
  kind TEXT CHECK (kind IN ('run','ride','swim','lift')), startedAt REAL NOT NULL, seconds INTEGER CHECK (seconds >= 0),
  notes TEXT, track BLOB);
CREATE INDEX workout_athlete ON workout(athleteId, startedAt);
CREATE TABLE totals (athleteId INTEGER PRIMARY KEY REFERENCES athlete, workouts INTEGER NOT NULL DEFAULT 0, seconds INTEGER NOT NULL DEFAULT 0);
CREATE TRIGGER workout_total AFTER INSERT ON workout BEGIN
  INSERT OR IGNORE INTO totals(athleteId) VALUES (NEW.athleteId);
  UPDATE totals SET workouts = workouts + 1, seconds = seconds + coalesce(NEW.seconds, 0) WHERE athleteId = NEW.athleteId;
END;
CREATE TABLE tag (workoutId INTEGER NOT NULL REFERENCES workout(id), label TEXT NOT NULL, PRIMARY KEY (workoutId, label)) WITHOUT ROWID;
CREATE VIRTUAL TABLE workout_search USING fts5(notes);
""", migratedTable: "workout")

    /// The shapes: CHECKs of every common kind, a collation only the app registers, a key of two
    /// foreign keys, a composite foreign key, a foreign key to a UNIQUE column, a NOT NULL
    /// self-reference, generated and STRICT columns, a RAISE trigger, a double-quoted string in a
    /// trigger, partial and NOCASE unique indexes created after the data, FTS3/4, RTREE, a view,
    /// a table named with a double quote, a table left empty, functions only the app registers
    /// (in a CHECK, a generated column and a trigger), JSON and date CHECKs, exactly one of two
    /// columns set, lower-case slugs without spaces, two tables referencing each other.
    public static let zoo = RealSchema(name: "zoo", sql: """
CREATE TABLE country (code TEXT PRIMARY KEY CHECK (length(code) = 2 AND code GLOB '[A-Z][A-Z]'), name TEXT NOT NULL COLLATE NOCASE UNIQUE);
CREATE TABLE person (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL UNIQUE, email TEXT CHECK (email LIKE '%_@_%._%'),
  age INTEGER CHECK (age BETWEEN 0 AND 150), score REAL NOT NULL DEFAULT 0 CHECK (score >= 0.0 AND score <= 1.0),
  status TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'deleted')),
  nick TEXT CHECK (typeof(nick) = 'text' AND length(nick) BETWEEN 3 AND 12),
  born TEXT, died TEXT,
  manager INTEGER NOT NULL REFERENCES person(id), country TEXT REFERENCES country(code) COLLATE localized, CHECK (died IS NULL OR died >= born));
CREATE TABLE membership (personGuid TEXT NOT NULL REFERENCES person(guid), groupId INTEGER NOT NULL REFERENCES grp(id),
  role TEXT NOT NULL CHECK (role IN ('owner', 'member')), PRIMARY KEY (personGuid, groupId)) WITHOUT ROWID;
CREATE TABLE grp (id INTEGER PRIMARY KEY, ownerId INTEGER REFERENCES person(id), name TEXT NOT NULL);
CREATE TABLE slot (a INTEGER NOT NULL, b INTEGER NOT NULL, note TEXT, PRIMARY KEY (a, b));
CREATE TABLE booking (id INTEGER PRIMARY KEY, slotA INTEGER NOT NULL, slotB INTEGER NOT NULL, qty INTEGER NOT NULL,
  total INTEGER GENERATED ALWAYS AS (qty * 10) STORED, FOREIGN KEY (slotA, slotB) REFERENCES slot(a, b));
CREATE TABLE strict_t (id INTEGER PRIMARY KEY, n INT NOT NULL, r REAL, t TEXT, b BLOB, anything ANY) STRICT;
CREATE TABLE audit (id INTEGER PRIMARY KEY, at TEXT NOT NULL, what TEXT);
CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER NOT NULL, kind TEXT NOT NULL);
CREATE TRIGGER item_qty BEFORE INSERT ON item WHEN NEW.qty <= 0 BEGIN SELECT RAISE(ABORT, 'qty must be positive'); END;
CREATE TRIGGER item_audit AFTER INSERT ON item BEGIN INSERT INTO audit(at, what) VALUES (datetime('now'), "item added"); END;
CREATE UNIQUE INDEX item_name ON item(name COLLATE NOCASE) WHERE name IS NOT NULL;
CREATE UNIQUE INDEX item_kind_qty ON item(kind, qty);
CREATE VIRTUAL TABLE doc3 USING fts3(body);
CREATE VIRTUAL TABLE doc4 USING fts4(title, body);
CREATE VIRTUAL TABLE place USING rtree(id, minX, maxX, minY, maxY);
CREATE VIEW adults AS SELECT * FROM person WHERE age >= 18;
CREATE TABLE "we""ird table" ("sel ect" TEXT, [order] INTEGER, "naïve" BLOB);
CREATE TABLE lookup (id INTEGER PRIMARY KEY, label TEXT NOT NULL);
CREATE TABLE never_used (id INTEGER PRIMARY KEY, x TEXT NOT NULL);
CREATE TABLE f (id INTEGER PRIMARY KEY, name TEXT NOT NULL, CHECK (app_ok(name) IS NOT 0));
CREATE TABLE g (id INTEGER PRIMARY KEY, x TEXT, y TEXT GENERATED ALWAYS AS (app_norm(x)) VIRTUAL);
CREATE TRIGGER f_log AFTER INSERT ON f BEGIN INSERT INTO g(x) VALUES (app_norm(NEW.name)); END;
CREATE TABLE event (id INTEGER PRIMARY KEY, payload TEXT NOT NULL CHECK (json_valid(payload)),
  day TEXT NOT NULL CHECK (length(day) = 10 AND date(day) IS NOT NULL), at TEXT NOT NULL CHECK (at = datetime(at)),
  email TEXT, phone TEXT, slug TEXT NOT NULL UNIQUE CHECK (slug = lower(slug) AND slug NOT LIKE '% %' AND length(slug) <= 40),
  CHECK ((email IS NULL) <> (phone IS NULL)));
CREATE TABLE a (id INTEGER PRIMARY KEY, bId INTEGER REFERENCES b(id));
CREATE TABLE b (id INTEGER PRIMARY KEY, aId INTEGER NOT NULL REFERENCES a(id));
""", migratedTable: "person")
}

/// The acceptance check of `../shared/schemas/README.md`, in Python's `sqlite3` (SQLite as another
/// program reads it, not through Backstage or GRDB).
public enum RealSchemaScripts {
    /// `makeStore SCHEMA.sql ROOT`: `ROOT/Documents/App.sqlite` in WAL mode, a few valid rows per
    /// table written with foreign keys on (the last commit left in the `-wal`: the writer dies),
    /// a document beside it.
    public static let makeStore = #"""
import sqlite3, sys, os, random
schema, root = sys.argv[1], sys.argv[2]
docs = os.path.join(root, "Documents"); os.makedirs(docs, exist_ok=True)
c = sqlite3.connect(os.path.join(docs, "App.sqlite"), isolation_level=None)
def register(db):
    db.create_collation("localized", lambda a, b: (a > b) - (a < b))
    db.create_function("app_ok", 1, lambda s: 1, deterministic=True)
    db.create_function("app_norm", 1, lambda s: s and s.lower(), deterministic=True)
register(c)
c.execute("pragma journal_mode=wal"); c.execute("pragma wal_autocheckpoint=0")
c.executescript(open(schema).read())
c.execute("pragma foreign_keys=on"); c.execute("pragma user_version=7"); c.execute("pragma application_id=1234567")
rnd = random.Random(1)
def q(n): return '"' + n.replace('"', '""') + '"'
virtual = [r for r in c.execute("select name, sql from sqlite_master where sql like 'CREATE VIRTUAL%'")]
tables = [r[0] for r in c.execute("select name from sqlite_master where type='table' and name not like 'sqlite_%' and sql not like 'CREATE VIRTUAL%'")
          if not any(r[0].startswith(v + "_") for v, _ in virtual)]
for _ in range(3):
  for t in tables:
    cols = c.execute('select name, type, "notnull", hidden from pragma_table_xinfo(?)', (t,)).fetchall()
    fks = c.execute('select "table", "from", "to", id from pragma_foreign_key_list(?)', (t,)).fetchall()
    for i in range(3):
      for attempt in range(2):
        vals, parents = {}, {}
        for (n, ty, notnull, hidden) in cols:
          if hidden: continue
          ty = (ty or "").upper(); fk = [f for f in fks if f[1] == n]
          if fk:
            table, _, to, fid = fk[0]
            if fid not in parents:
              tos = [f[2] for f in fks if f[3] == fid]
              if None in tos: tos = [r[0] for r in c.execute("select name from pragma_table_info(?) where pk > 0 order by pk", (table,))] or ["rowid"]
              parents[fid] = dict(zip([f[1] for f in fks if f[3] == fid], c.execute("select %s from %s order by random() limit 1" % (",".join(map(q, tos)), q(table))).fetchone() or []))
            vals[n] = parents[fid].get(n)
          elif attempt and not notnull: vals[n] = None
          elif "INT" in ty: vals[n] = rnd.randint(1, 1000)
          elif any(k in ty for k in ("REAL", "NUM", "DEC", "FLOA", "DOUB")): vals[n] = round(rnd.random(), 2)
          elif "BLOB" in ty: vals[n] = os.urandom(16)
          else: vals[n] = "v%d" % rnd.randint(1, 10**6)
        try:
          c.execute("insert into %s (%s) values (%s)" % (q(t), ",".join(map(q, vals)), ",".join("?" * len(vals))), list(vals.values())); break
        except sqlite3.Error: pass
for v, sql in virtual:
  if "content=" in sql.replace(" ", "").lower(): c.execute("insert into %s(%s) values('rebuild')" % (q(v), q(v)))
  elif "fts" in sql.lower():
    n = len(c.execute("select * from %s" % q(v)).description)
    c.execute("insert into %s values (%s)" % (q(v), ",".join(["'hello world'"] * n)))
  elif "rtree" in sql.lower(): c.execute("insert into %s values (1, 0, 1, 0, 1)" % q(v))
open(os.path.join(docs, "Report.txt"), "w").write("a user document\n")
os.kill(os.getpid(), 9)
"""#

    /// `check FIXTURE SOURCE BYTES`: integrity, foreign keys, FTS integrity, every row re-inserted
    /// into fresh copies of the tables (CHECK, NOT NULL, UNIQUE, STRICT), the schema equal to the
    /// source's, the header's user_version and application_id, every table filled, the size within
    /// 0.5x-2x. Prints OK or FAIL and the problems; exits 1 on any.
    public static let check = #"""
# check.py FIXTURE_STORE SOURCE_SQL_STORE SIZE
import sqlite3, sys, os, shutil, tempfile, re
def register(db):
    db.create_collation("localized", lambda a, b: (a > b) - (a < b))
    db.create_function("app_ok", 1, lambda s: 1, deterministic=True)
    db.create_function("app_norm", 1, lambda s: s and s.lower(), deterministic=True)
store, source, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
tmp = tempfile.mkdtemp()
for suffix in ["", "-wal"]:
  if os.path.exists(store + suffix): shutil.copy(store + suffix, os.path.join(tmp, "f.sqlite" + suffix))
fx = sqlite3.connect(os.path.join(tmp, "f.sqlite")); register(fx)
src = sqlite3.connect("file:%s?mode=ro" % source, uri=True) if not source.endswith(".sql") else None
problems = []
if fx.execute("pragma integrity_check").fetchall() != [("ok",)]: problems.append("integrity")
fk = fx.execute("pragma foreign_key_check").fetchall()
if fk: problems.append("fk violations %d e.g. %s" % (len(fk), fk[:3]))
def q(n): return '"' + n.replace('"', '""') + '"'
norm = lambda s: re.sub(r"\s+", " ", s or "").strip()
a = sorted((t, n, norm(s)) for t, n, s in fx.execute("select type, name, sql from sqlite_master"))
b = sorted((t, n, norm(s)) for t, n, s in src.execute("select type, name, sql from sqlite_master"))
if a != b: problems.append("schema differs: %s" % (set(a) ^ set(b)))
for (n, sql) in fx.execute("select name, sql from sqlite_master where sql like 'CREATE VIRTUAL%'").fetchall():
  if "fts" in sql.lower():
    try: fx.execute("insert into %s(%s) values('integrity-check')" % (q(n), q(n)))
    except sqlite3.Error as e: problems.append("fts %s: %s" % (n, e))
fresh = sqlite3.connect(":memory:"); register(fresh)
shadow = set()
for (n, sql) in fx.execute("select name, sql from sqlite_master where sql like 'CREATE VIRTUAL%'"):
  for (s,) in fx.execute("select name from sqlite_master where name like ? and type='table'", (n + "\\_%",)): pass
tables = [r for r in fx.execute("select name, sql from sqlite_master where type='table' and name not like 'sqlite_%'")]
virt = [n for n, s in tables if s.upper().startswith("CREATE VIRTUAL")]
ordinary = [(n, s) for n, s in tables if not s.upper().startswith("CREATE VIRTUAL") and not any(n.startswith(v + "_") for v in virt)]
for n, s in ordinary: fresh.execute(s)
for (s,) in fx.execute("select sql from sqlite_master where type='index' and sql is not null"):
  try: fresh.execute(s)
  except sqlite3.Error as e: problems.append("index %s" % e)
counts = {}
for n, s in ordinary:
  cols = [r[0] for r in fx.execute("select name from pragma_table_xinfo(?) where hidden=0", (n,))]
  rows = fx.execute("select %s from %s" % (",".join(q(c) for c in cols), q(n))).fetchall()
  counts[n] = len(rows)
  try: fresh.executemany("insert into %s (%s) values (%s)" % (q(n), ",".join(q(c) for c in cols), ",".join("?" * len(cols))), rows)
  except sqlite3.Error as e: problems.append("reinsert %s: %s" % (n, e))
for n in virt: counts[n] = fx.execute("select count(*) from %s" % q(n)).fetchone()[0]
srcc = {n: src.execute("select count(*) from %s" % q(n)).fetchone()[0] for n in counts}
empty = [n for n in counts if counts[n] == 0]
if empty: problems.append("empty tables %s (source had %s)" % (empty, [srcc[n] for n in empty]))
actual = os.path.getsize(store) + (os.path.getsize(store + "-wal") if os.path.exists(store + "-wal") else 0)
if not (0.5 * size <= actual <= 2 * size): problems.append("size %d for %d" % (actual, size))
uv = fx.execute("pragma user_version").fetchone()[0], fx.execute("pragma application_id").fetchone()[0]
suv = src.execute("pragma user_version").fetchone()[0], src.execute("pragma application_id").fetchone()[0]
if uv != suv: problems.append("user_version/application_id %s, source %s" % (uv, suv))
print("OK" if not problems else "FAIL", "size=%d rows=%s" % (actual, sum(counts.values())))
for p in problems: print("  ", p)
sys.exit(1 if problems else 0)
"""#
}
