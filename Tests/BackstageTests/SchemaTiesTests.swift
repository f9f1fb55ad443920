import Backstage
import Foundation
import Testing

/// What ties tables together, read from a schema's SQL: the ties a split must not separate, and
/// the words that look like a table's name without being one.
@Suite struct SchemaTiesTests {
    static func objects(_ statements: [(String, String, String, String)]) -> [SchemaObject] {
        statements.map { SchemaObject(type: $0.0, name: $0.1, table: $0.2, sql: $0.3) }
    }

    /// The ties broken when `moved` goes to `caches/Cache.sqlite` and the rest stays.
    static func separated(_ ties: SchemaTies, moving moved: Set<String>, discarding discarded: Set<String> = [])
        -> [String]
    {
        ties.separated { table in
            if discarded.contains(table) { return .discarded }
            return moved.contains(table) ? .store("caches/Cache.sqlite") : .store("applicationSupport/Feed.sqlite")
        }
        .map { "\($0.tie.table) -> \($0.tie.other): \($0.tie.kind)" }
    }

    @Test func quotedAndQualifiedForeignKeysAreTies() {
        let ties = SchemaTies(
            Self.objects([
                ("table", "Pod Cast", "Pod Cast", #"CREATE TABLE "Pod Cast"(id INTEGER PRIMARY KEY)"#),
                (
                    "table", "thumbnail", "thumbnail",
                    #"CREATE TABLE thumbnail(id INTEGER PRIMARY KEY, p INTEGER, FOREIGN KEY (p) REFERENCES [pod cast](id))"#
                ),
            ]))
        #expect(Self.separated(ties, moving: ["thumbnail"]) == ["thumbnail -> Pod Cast: foreign key"])
        // The child may go (a rebuildable table); the parent may not go without it.
        #expect(Self.separated(ties, moving: [], discarding: ["thumbnail"]).isEmpty)
        #expect(Self.separated(ties, moving: [], discarding: ["pod cast"]) == ["thumbnail -> Pod Cast: foreign key"])
    }

    @Test func aColumnNamedLikeATableIsNoTie() {
        let ties = SchemaTies(
            Self.objects([
                ("table", "podcast", "podcast", "CREATE TABLE podcast(id INTEGER PRIMARY KEY)"),
                ("table", "thumbnail", "thumbnail", "CREATE TABLE thumbnail(id INTEGER PRIMARY KEY, podcast INTEGER)"),
                (
                    "trigger", "thumbnail_touch", "thumbnail",
                    "CREATE TRIGGER thumbnail_touch AFTER UPDATE OF podcast ON thumbnail BEGIN "
                        + "UPDATE thumbnail SET podcast = NEW.podcast WHERE id = NEW.id AND 'podcast' <> ''; END"
                ),
                (
                    "view", "shows", "shows",
                    "CREATE VIEW shows AS SELECT t.podcast FROM thumbnail AS t WHERE t.podcast > 0"
                ),
            ]))
        #expect(Self.separated(ties, moving: ["podcast"]).isEmpty)
    }

    @Test func triggersViewsThroughViewsAndFullTextContentAreTies() {
        let ties = SchemaTies(
            Self.objects([
                ("table", "episode", "episode", "CREATE TABLE episode(id INTEGER PRIMARY KEY, title TEXT)"),
                ("table", "play", "play", "CREATE TABLE play(id INTEGER PRIMARY KEY, episode INTEGER)"),
                (
                    "trigger", "forget", "episode",
                    "CREATE TRIGGER forget AFTER DELETE ON episode BEGIN DELETE FROM main.play WHERE episode = OLD.id; END"
                ),
                ("view", "recent", "recent", "CREATE VIEW recent AS SELECT * FROM episode, play WHERE play.episode = episode.id"),
                ("view", "latest", "latest", "CREATE VIEW latest AS SELECT * FROM recent LIMIT 1"),
                ("table", "note", "note", "CREATE TABLE note(id INTEGER PRIMARY KEY, body TEXT)"),
                (
                    "table", "note_search", "note_search",
                    #"CREATE VIRTUAL TABLE note_search USING fts4(body, content="note")"#
                ),
                (
                    "table", "loose_search", "loose_search",
                    "CREATE VIRTUAL TABLE loose_search USING fts5(body, content='')"
                ),
            ]))
        #expect(
            Self.separated(ties, moving: ["play", "note_search", "loose_search"]) == [
                "episode -> play: trigger forget", "episode -> play: view recent", "episode -> play: view latest",
                "note_search -> note: full-text content",
            ])
        // A view is lost with the table it reads, whichever goes.
        #expect(
            Self.separated(ties, moving: [], discarding: ["episode"]) == [
                "episode -> play: view recent", "episode -> play: view latest",
            ])
    }

    /// A shadow table named in a plan goes where its virtual table goes (an RTREE's `_node`, an
    /// FTS5's `_data`): apart, or kept while the virtual table is discarded, the index is torn.
    @Test func shadowTablesGoWithTheirVirtualTable() {
        let ties = SchemaTies(
            Self.objects([
                ("table", "places", "places", "CREATE VIRTUAL TABLE places USING rtree(id, x0, x1)")
            ]), shadows: ["places": ["places_node", "places_parent", "places_rowid"]])
        #expect(Self.separated(ties, moving: ["places"]).count == 3)
        #expect(Self.separated(ties, moving: ["places_node"]) == ["places_node -> places: shadow table"])
        #expect(Self.separated(ties, moving: [], discarding: ["places"]).count == 3)
        #expect(Self.separated(ties, moving: ["places", "places_node", "places_parent", "places_rowid"]).isEmpty)
    }
}
