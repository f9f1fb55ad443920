CREATE TABLE author (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE recipe (id INTEGER PRIMARY KEY, authorId INTEGER NOT NULL REFERENCES author(id) ON DELETE CASCADE, title TEXT NOT NULL,
  servings INTEGER NOT NULL CHECK (servings BETWEEN 1 AND 24), favorite INTEGER NOT NULL DEFAULT 0 CHECK (favorite IN (0, 1)),
  createdAt REAL NOT NULL, photo BLOB, rating INTEGER);
CREATE INDEX recipe_author ON recipe(authorId);
CREATE TABLE ingredient (recipeId INTEGER NOT NULL REFERENCES recipe(id) ON DELETE CASCADE, position INTEGER NOT NULL,
  name TEXT NOT NULL, quantity TEXT, PRIMARY KEY (recipeId, position)) WITHOUT ROWID;
CREATE VIRTUAL TABLE recipe_search USING fts5(title, body);
CREATE TABLE history (id INTEGER PRIMARY KEY, recipeId INTEGER, action TEXT NOT NULL, at REAL NOT NULL);
CREATE TRIGGER recipe_history AFTER INSERT ON recipe BEGIN INSERT INTO history(recipeId, action, at) VALUES (NEW.id, 'created', NEW.createdAt); END;
CREATE VIEW favorites AS SELECT * FROM recipe WHERE favorite = 1;
