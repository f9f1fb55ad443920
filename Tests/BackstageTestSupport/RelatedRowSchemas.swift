import Foundation

/// Issue 53: schemas whose rules tie a row to other rows and tables — a `CHECK` comparing two
/// foreign keys, a `RAISE` trigger reading another table, two composite keys sharing a column,
/// a trigger-guarded stock table, a `WITHOUT ROWID` shape SQLite 3.40.1's `integrity_check`
/// misreads. Each comes with the SQL of valid rows (run by Python with foreign keys on).
public struct RelatedRowSchema: Sendable, CustomStringConvertible {
    public var name: String
    public var sql: String
    /// Valid rows, as SQL Python runs after `sql` with `PRAGMA foreign_keys = ON`.
    public var rows: String
    /// A table a v2 migration adds a column and an index to.
    public var migratedTable: String

    public var description: String { name }

    public init(name: String, sql: String, rows: String, migratedTable: String) {
        self.name = name
        self.sql = sql
        self.rows = rows
        self.migratedTable = migratedTable
    }

    public static let all = [pairs, rooms, sharedKeys, stock, chunks, ownStock, json, collated]

    /// A CHECK across two keys of one parent (the primary key their pair), an ordering CHECK, a
    /// self-reference that may not name its own row.
    public static let pairs = RelatedRowSchema(
        name: "pairs",
        sql: """
            CREATE TABLE groups (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE groups_relations (containing_id INTEGER NOT NULL REFERENCES groups(id),
              sub_id INTEGER NOT NULL REFERENCES groups(id), CHECK (containing_id != sub_id), PRIMARY KEY (containing_id, sub_id));
            CREATE TABLE ordered_pairs (id INTEGER PRIMARY KEY, low INTEGER NOT NULL REFERENCES groups(id),
              high INTEGER NOT NULL REFERENCES groups(id), CHECK (low < high));
            CREATE TABLE folder (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES folder(id), name TEXT NOT NULL,
              CHECK (parent_id IS NOT id));
            """,
        rows: """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20) INSERT INTO groups SELECT i, 'g' || i FROM n;
            INSERT INTO groups_relations SELECT a.id, b.id FROM groups a, groups b WHERE a.id != b.id AND (a.id + b.id) % 3 = 0;
            INSERT INTO ordered_pairs (low, high) SELECT a.id, b.id FROM groups a, groups b WHERE a.id < b.id AND b.id - a.id = 2;
            INSERT INTO folder VALUES (1, NULL, 'root');
            WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < 30) INSERT INTO folder SELECT i, i / 2, 'f' || i FROM n;
            """, migratedTable: "ordered_pairs")

    /// Synapse's shape (matrix-org/synapse, `event_relations`-style tables whose room must be the
    /// event's: `RAISE(ABORT, 'Incorrect room_id ...')`) and Zotero's (zotero/zotero,
    /// `schema/userdata.sql`: a collection's item must be of the collection's library), simplified.
    public static let rooms = RelatedRowSchema(
        name: "rooms",
        sql: """
            CREATE TABLE rooms (room_id TEXT NOT NULL PRIMARY KEY, creator TEXT NOT NULL);
            CREATE TABLE events (event_id TEXT NOT NULL PRIMARY KEY, room_id TEXT NOT NULL REFERENCES rooms(room_id), type TEXT NOT NULL);
            CREATE TABLE event_labels (event_id TEXT NOT NULL, label TEXT NOT NULL, room_id TEXT NOT NULL, PRIMARY KEY (event_id, label));
            CREATE TRIGGER event_labels_room BEFORE INSERT ON event_labels FOR EACH ROW BEGIN
              SELECT RAISE(ABORT, 'Incorrect room_id in event_labels')
              WHERE (SELECT room_id FROM events WHERE event_id = NEW.event_id) != NEW.room_id;
            END;
            CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, type TEXT NOT NULL);
            CREATE TABLE collections (collectionID INTEGER PRIMARY KEY, libraryID INTEGER NOT NULL REFERENCES libraries(libraryID),
              collectionName TEXT NOT NULL);
            CREATE TABLE items (itemID INTEGER PRIMARY KEY, libraryID INTEGER NOT NULL REFERENCES libraries(libraryID), key TEXT NOT NULL);
            CREATE TABLE collectionItems (collectionID INTEGER NOT NULL REFERENCES collections(collectionID),
              itemID INTEGER NOT NULL REFERENCES items(itemID), orderIndex INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (collectionID, itemID));
            CREATE TRIGGER insert_collectionItems BEFORE INSERT ON collectionItems FOR EACH ROW BEGIN
              SELECT RAISE(ABORT, 'insert on table "collectionItems" violates foreign key constraint "fk_collectionItems_libraryID"')
              WHERE (SELECT libraryID FROM collections WHERE collectionID = NEW.collectionID) != (SELECT libraryID FROM items WHERE itemID = NEW.itemID);
            END;
            """,
        rows: """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6) INSERT INTO rooms SELECT '!r' || i, '@u' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40) INSERT INTO events SELECT '$e' || i, '!r' || (i % 6 + 1), 'm.room.message' FROM n;
            INSERT INTO event_labels SELECT event_id, 'label', room_id FROM events;
            INSERT INTO libraries VALUES (1, 'user'), (2, 'group'), (3, 'group');
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 9) INSERT INTO collections SELECT i, i % 3 + 1, 'c' || i FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30) INSERT INTO items SELECT i, i % 3 + 1, 'K' || i FROM n;
            INSERT INTO collectionItems (collectionID, itemID) SELECT c.collectionID, i.itemID FROM collections c JOIN items i USING (libraryID);
            """, migratedTable: "events")

    /// Two composite foreign keys sharing their first column (a to-do app's tags and lists of a user).
    public static let sharedKeys = RelatedRowSchema(
        name: "shared-keys",
        sql: """
            CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            CREATE TABLE tags (userId INTEGER NOT NULL REFERENCES users(id), id INTEGER NOT NULL, label TEXT NOT NULL, PRIMARY KEY (userId, id));
            CREATE TABLE lists (userId INTEGER NOT NULL REFERENCES users(id), id INTEGER NOT NULL, title TEXT NOT NULL, PRIMARY KEY (userId, id));
            CREATE TABLE list_tags (userId INTEGER NOT NULL, tagId INTEGER NOT NULL, listId INTEGER NOT NULL,
              PRIMARY KEY (userId, tagId, listId), FOREIGN KEY (userId, tagId) REFERENCES tags(userId, id),
              FOREIGN KEY (userId, listId) REFERENCES lists(userId, id));
            CREATE TABLE todos (id INTEGER PRIMARY KEY, userId INTEGER NOT NULL, listId INTEGER NOT NULL, tagId INTEGER,
              title TEXT NOT NULL, FOREIGN KEY (userId, listId) REFERENCES lists(userId, id), FOREIGN KEY (userId, tagId) REFERENCES tags(userId, id));
            """,
        rows: """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 8) INSERT INTO users SELECT i, 'u' || i FROM n;
            INSERT INTO tags SELECT u.id, t.i, 'tag' FROM users u, (SELECT 1 AS i UNION SELECT 2 UNION SELECT 3) t;
            INSERT INTO lists SELECT u.id, t.i * 10, 'list' FROM users u, (SELECT 1 AS i UNION SELECT 2) t;
            INSERT INTO list_tags SELECT t.userId, t.id, l.id FROM tags t JOIN lists l USING (userId);
            INSERT INTO todos (userId, listId, tagId, title) SELECT l.userId, l.id, t.id, 'do' FROM lists l JOIN tags t USING (userId);
            """, migratedTable: "todos")

    /// Grocy's stock (grocy/grocy, `migrations/`: `prevent_adding_no_own_stock_products_to_stock`),
    /// simplified: a product with `no_own_stock = 1` cannot be stocked, an AFTER INSERT trigger
    /// logs the row and another rewrites the row just inserted; a read-only view of it.
    public static let stock = RelatedRowSchema(
        name: "stock",
        sql: """
            CREATE TABLE products (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE,
              no_own_stock TINYINT NOT NULL DEFAULT 0 CHECK (no_own_stock IN (0, 1)), parent_product_id INTEGER);
            CREATE TABLE stock (id INTEGER PRIMARY KEY AUTOINCREMENT, product_id INTEGER NOT NULL, amount DECIMAL(15, 2) NOT NULL,
              best_before_date DATE, stock_id TEXT NOT NULL, open TINYINT NOT NULL DEFAULT 0 CHECK (open IN (0, 1)));
            CREATE TABLE stock_log (id INTEGER PRIMARY KEY AUTOINCREMENT, product_id INTEGER NOT NULL, amount DECIMAL(15, 2) NOT NULL,
              stock_row_id INTEGER);
            CREATE TRIGGER prevent_adding_no_own_stock_products_to_stock BEFORE INSERT ON stock
            BEGIN
              SELECT CASE WHEN((
                SELECT 1
                FROM products p
                WHERE id = NEW.product_id
                  AND no_own_stock = 1
              ) NOT NULL) THEN RAISE(ABORT, 'no_own_stock=1 products cannot be added to stock') END;
            END;
            CREATE TRIGGER stock_logged AFTER INSERT ON stock BEGIN
              INSERT INTO stock_log (product_id, amount, stock_row_id) VALUES (NEW.product_id, NEW.amount, NEW.id);
            END;
            CREATE TRIGGER stock_id_set AFTER INSERT ON stock BEGIN
              UPDATE stock SET stock_id = 'S' || NEW.id WHERE id = NEW.id;
            END;
            CREATE VIEW stock_current AS SELECT product_id, SUM(amount) AS amount FROM stock GROUP BY product_id;
            CREATE TRIGGER stock_current_read_only INSTEAD OF INSERT ON stock_current BEGIN
              SELECT RAISE(ABORT, 'stock_current is read-only');
            END;
            """,
        rows: """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12) INSERT INTO products (name, no_own_stock) SELECT 'p' || i, i % 4 = 0 FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4)
              INSERT INTO stock (product_id, amount, best_before_date, stock_id) SELECT p.id, n.i * 1.5, '2027-01-01', '' FROM products p, n WHERE p.no_own_stock = 0;
            """, migratedTable: "stock")

    /// A `WITHOUT ROWID` table whose `NOT NULL` column precedes a later primary-key column: SQLite
    /// 3.40.1's `integrity_check` reports `NULL value in event_chunks.event_id` of every row.
    public static let chunks = RelatedRowSchema(
        name: "chunks",
        sql: """
            CREATE TABLE events (stream_ordering INTEGER PRIMARY KEY, event_id TEXT NOT NULL UNIQUE);
            CREATE TABLE event_chunks (event_id TEXT NOT NULL REFERENCES events(event_id), chunk_id INTEGER,
              topological_ordering INTEGER NOT NULL, stream_ordering INTEGER NOT NULL,
              PRIMARY KEY (chunk_id, topological_ordering, stream_ordering)) WITHOUT ROWID;
            """,
        rows: """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) INSERT INTO events SELECT i, '$e' || i FROM n;
            INSERT INTO event_chunks SELECT event_id, stream_ordering % 5, stream_ordering, stream_ordering FROM events;
            """, migratedTable: "events")

    /// A parent with a property a `RAISE` trigger demands (`NOT EXISTS (SELECT 1 FROM products p
    /// WHERE p.id = NEW.product_id AND p.no_own_stock = 0 AND p.parent_product_id IS NULL)`),
    /// one product in ten meeting it, and a trigger refusing what another table lists (`EXISTS
    /// (SELECT 1 FROM recalls WHERE product_id = NEW.product_id)`).
    public static let ownStock = RelatedRowSchema(
        name: "own-stock",
        sql: """
            CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,
              no_own_stock TINYINT NOT NULL DEFAULT 0 CHECK (no_own_stock IN (0, 1)), parent_product_id INTEGER REFERENCES products(id));
            CREATE TABLE recalls (product_id INTEGER NOT NULL, reason TEXT);
            CREATE TABLE stock (id INTEGER PRIMARY KEY, product_id INTEGER NOT NULL, amount REAL NOT NULL CHECK (amount > 0), stock_id TEXT NOT NULL);
            CREATE TRIGGER stock_needs_own_stock_product BEFORE INSERT ON stock BEGIN
              SELECT RAISE(ABORT, 'only products with their own stock, not sub-products, can be stocked')
              WHERE NOT EXISTS (SELECT 1 FROM products p WHERE p.id = NEW.product_id AND p.no_own_stock = 0 AND p.parent_product_id IS NULL);
            END;
            CREATE TRIGGER stock_not_recalled BEFORE INSERT ON stock WHEN EXISTS (SELECT 1 FROM recalls WHERE product_id = NEW.product_id) BEGIN
              SELECT RAISE(ABORT, 'a recalled product cannot be stocked');
            END;
            """,
        rows: """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)
              INSERT INTO products SELECT i, 'p' || i, i % 2, CASE WHEN i % 10 = 2 THEN NULL ELSE 1 END FROM n;
            INSERT INTO recalls VALUES (12, 'batch'), (3, 'batch');
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50)
              INSERT INTO stock (product_id, amount, stock_id) SELECT p.id, n.i * 0.5, 's' || n.i FROM products p, n
              WHERE p.no_own_stock = 0 AND p.parent_product_id IS NULL AND p.id NOT IN (SELECT product_id FROM recalls);
            """, migratedTable: "stock")

    /// Signal Desktop's shape (signalapp/Signal-Desktop, `ts/sql/migrations`): generated columns
    /// reading a `json` column with `json_extract`, one of them indexed, and a `CHECK
    /// (json_valid(...))`: a row whose JSON is not JSON is refused ("malformed JSON").
    public static let json = RelatedRowSchema(
        name: "json",
        sql: """
            CREATE TABLE messages (rowid INTEGER PRIMARY KEY ASC, id STRING UNIQUE, json TEXT, type STRING, body TEXT,
              isStory INTEGER GENERATED ALWAYS AS (type IS 'story'),
              callId TEXT GENERATED ALWAYS AS (json_extract(json, '$.callId')));
            CREATE INDEX messages_call ON messages (callId);
            CREATE TABLE kyberPreKeys (id STRING PRIMARY KEY NOT NULL, json TEXT NOT NULL,
              ourServiceId NUMBER GENERATED ALWAYS AS (json_extract(json, '$.ourServiceId')));
            CREATE INDEX kyberPreKeys_ourServiceId ON kyberPreKeys (ourServiceId);
            CREATE TABLE jobs (id TEXT PRIMARY KEY, data TEXT NOT NULL CHECK (json_valid(data)), queue TEXT);
            CREATE INDEX jobs_attempt ON jobs (data ->> '$.attempt');
            """,
        rows: """
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 60)
              INSERT INTO messages (id, json, type, body) SELECT 'm' || i, json_object('id', 'm' || i, 'callId', 'c' || i), 'incoming', 'hello' FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20)
              INSERT INTO kyberPreKeys (id, json) SELECT 'k' || i, json_object('ourServiceId', 'aci' || (i % 3)) FROM n;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10)
              INSERT INTO jobs SELECT 'j' || i, json_object('attempt', i), 'q' FROM n;
            """, migratedTable: "messages")

    /// Anki's shape (ankitects/anki, `rslib/src/storage/schema11.sql` and its upgrades): keys and
    /// unique indexes compared by `unicase`, a collation only the app registers (`WITHOUT ROWID`
    /// tags, deck names). Here, as in Anki, `unicase` orders by Unicode case folding.
    public static let collated = RelatedRowSchema(
        name: "collated",
        sql: """
            CREATE TABLE decks (id integer PRIMARY KEY NOT NULL, name text NOT NULL COLLATE unicase, mtime_secs integer NOT NULL);
            CREATE UNIQUE INDEX idx_decks_name ON decks (name);
            CREATE TABLE tags (tag text NOT NULL PRIMARY KEY COLLATE unicase, usn integer NOT NULL, collapsed boolean NOT NULL) WITHOUT ROWID;
            CREATE TABLE notes (id integer PRIMARY KEY, tags text NOT NULL, flds text NOT NULL);
            """,
        rows: """
            INSERT INTO decks VALUES (1, 'Default', 1), (2, 'spanish', 1), (3, 'Geo::Europe', 1), (4, 'zoology', 1);
            INSERT INTO tags VALUES ('Tag', 0, 0), ('leech', 0, 0), ('marked', 0, 0), ('Geo::Europe', 0, 0), ('ÄRZTE', 0, 0);
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) INSERT INTO notes SELECT i, ' leech ', 'front' FROM n;
            """, migratedTable: "notes")
}

/// Python's `sqlite3` making and checking the stores of ``RelatedRowSchema``.
public enum RelatedRowScripts {
    /// `make SCHEMA.sql ROWS.sql ROOT`: `ROOT/Documents/App.sqlite` in WAL mode with the rows,
    /// foreign keys on, and a document beside it.
    public static let make = #"""
import sqlite3, sys, os
schema, rows, root = sys.argv[1], sys.argv[2], sys.argv[3]
docs = os.path.join(root, "Documents"); os.makedirs(docs, exist_ok=True)
def unicase(a, b):
  a, b = a.casefold(), b.casefold()
  return (a > b) - (a < b)
c = sqlite3.connect(os.path.join(docs, "App.sqlite"), isolation_level=None)
c.create_collation("unicase", unicase)
c.execute("pragma journal_mode=wal")
c.executescript(open(schema).read())
c.execute("pragma foreign_keys=on")
c.executescript(open(rows).read())
assert c.execute("pragma foreign_key_check").fetchall() == []
open(os.path.join(docs, "Report.txt"), "w").write("a user document\n")
c.close()
"""#

    /// `check FIXTURE BYTES`: integrity (a `NULL value in T.c` line counted only when a row of T
    /// holds NULL in c: this SQLite may be 3.40.1), foreign keys, every table filled, the size
    /// within 0.5x-2x, and every row re-inserted, table by table in the order the schema creates
    /// them, into a fresh copy of the tables and of the triggers that RAISE, foreign keys on and
    /// deferred to the end (a table may reference one created after it): each CHECK, key and
    /// trigger condition holds of every row; FTS5 tables pass their own integrity-check. The
    /// collation `unicase` is Anki's (Unicode case folding). Prints OK or FAIL and the problems.
    public static let check = #"""
import sqlite3, sys, os, shutil, tempfile
store, size = sys.argv[1], int(sys.argv[2])
tmp = tempfile.mkdtemp()
for suffix in ["", "-wal"]:
  if os.path.exists(store + suffix): shutil.copy(store + suffix, os.path.join(tmp, "f.sqlite" + suffix))
fx = sqlite3.connect(os.path.join(tmp, "f.sqlite"))
def unicase(a, b):
  a, b = a.casefold(), b.casefold()
  return (a > b) - (a < b)
fx.create_collation("unicase", unicase)
def q(n): return '"' + n.replace('"', '""') + '"'
problems = []
for (line,) in fx.execute("pragma integrity_check").fetchall():
  if line == "ok": continue
  if line.startswith("NULL value in "):
    t, col = line[len("NULL value in "):].split(".", 1)
    if fx.execute("select count(*) from %s where typeof(%s) = 'null'" % (q(t), q(col))).fetchone()[0] == 0: continue
  problems.append("integrity: " + line); break
fk = fx.execute("pragma foreign_key_check").fetchall()
if fk: problems.append("fk violations %d e.g. %s" % (len(fk), fk[:3]))
virtual = [n for (n,) in fx.execute("select name from sqlite_master where type='table' and sql like 'CREATE VIRTUAL%'")]
tables = [(n, s) for (n, s) in fx.execute("select name, sql from sqlite_master where type='table' and name not like 'sqlite_%' order by rowid") if n not in virtual and not any(n.startswith(v + "_") for v in virtual)]
for v in virtual:
  if "fts5" in fx.execute("select lower(sql) from sqlite_master where name=?", (v,)).fetchone()[0]:
    try: fx.execute("insert into %s(%s) values('integrity-check')" % (q(v), q(v)))
    except sqlite3.Error as e: problems.append("fts5 integrity %s: %s" % (v, e))
fresh = sqlite3.connect(":memory:", isolation_level=None)
fresh.create_collation("unicase", unicase)
for n, s in tables: fresh.execute(s)
for (s,) in fx.execute("select sql from sqlite_master where type='view'"): fresh.execute(s)
for (s,) in fx.execute("select sql from sqlite_master where type='trigger' and upper(sql) like '%RAISE%'"): fresh.execute(s)
fresh.execute("pragma foreign_keys=on")
fresh.execute("begin")
fresh.execute("pragma defer_foreign_keys=on")
total = 0
for n, s in tables:
  cols = [r[0] for r in fx.execute("select name from pragma_table_xinfo(?) where hidden=0", (n,))]
  rows = fx.execute("select %s from %s" % (",".join(q(c) for c in cols), q(n))).fetchall()
  total += len(rows)
  if not rows: problems.append("empty table %s" % n)
  for row in rows:
    try: fresh.execute("insert into %s (%s) values (%s)" % (q(n), ",".join(q(c) for c in cols), ",".join("?" * len(cols))), row)
    except sqlite3.Error as e: problems.append("reinsert %s: %s" % (n, e)); break
try: fresh.execute("commit")
except sqlite3.Error as e: problems.append("reinserted rows: %s" % e)
actual = os.path.getsize(store) + (os.path.getsize(store + "-wal") if os.path.exists(store + "-wal") else 0)
if not (0.5 * size <= actual <= 2 * size): problems.append("size %d for %d" % (actual, size))
print("OK" if not problems else "FAIL", "size=%d rows=%d" % (actual, total))
for p in problems: print("  ", p)
sys.exit(1 if problems else 0)
"""#
}
