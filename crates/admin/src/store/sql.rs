//! Plain SQL on the store: statements typed by the DBA, the `SHOW` statements SQLite lacks,
//! and bulk replacement of a table's rows (how stats are published before they are read).

use super::error::StoreError;
use super::{ResultSet, SqlOutcome, Store};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, Statement};

/// A value as the mysql CLI prints it; `None` is NULL.
fn display(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Null => None,
        ValueRef::Integer(i) => Some(i.to_string()),
        ValueRef::Real(r) => Some(r.to_string()),
        ValueRef::Text(t) | ValueRef::Blob(t) => Some(String::from_utf8_lossy(t).into_owned()),
    }
}

/// Whether `name` is a plain identifier: letters, digits, `_` and `$`, not empty. Names are
/// spliced into SQL (SQLite cannot bind them), so only these are accepted.
fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
}

/// Removes one layer of MySQL (backquote) or SQL (double quote) identifier quoting.
fn unquote(name: &str) -> &str {
    let n = name.trim();
    for q in ['`', '"'] {
        if let Some(inner) = n.strip_prefix(q).and_then(|s| s.strip_suffix(q)) {
            return inner;
        }
    }
    n
}

/// Splits `[schema.]table` into its parts, refusing anything but plain identifiers.
fn split_table_name(name: &str) -> Result<(Option<&str>, &str), StoreError> {
    let invalid = || StoreError::InvalidTableName(name.to_string());
    let (schema, table) = match name.trim().split_once('.') {
        Some((s, t)) => (Some(unquote(s)), unquote(t)),
        None => (None, unquote(name)),
    };
    if !is_identifier(table) || schema.is_some_and(|s| !is_identifier(s)) {
        return Err(invalid());
    }
    Ok((schema, table))
}

/// The most memory an admin result may take (its values, and a few words for each): the
/// result is built whole before it is sent, and one careless join of the stats tables would
/// otherwise take gigabytes from the proxy. Also the longest string or blob SQLite makes.
pub(crate) const RESULT_LIMIT: usize = 128 << 20;

/// What a value costs in a collected result beyond its bytes (a `String` and its slot).
const VALUE_OVERHEAD: usize = 32;

/// Runs a query and collects its rows as text.
fn query(conn: &Connection, sql: &str, params: &[&str]) -> Result<ResultSet, StoreError> {
    let stmt = conn.prepare(sql).map_err(StoreError::Sql)?;
    collect(stmt, params)
}

/// Runs a prepared query and collects its rows as text.
fn collect(mut stmt: Statement<'_>, params: &[&str]) -> Result<ResultSet, StoreError> {
    let columns: Vec<String> = stmt.column_names().map(String::from).collect();
    let width = columns.len();
    let mut rows = stmt
        .query(rusqlite::params_from_iter(params))
        .map_err(StoreError::Sql)?;
    let mut out = Vec::new();
    let mut size = 0usize;
    while let Some(row) = rows.next().map_err(StoreError::Sql)? {
        let values = (0..width)
            .map(|i| row.get_ref(i).map(display))
            .collect::<Result<Vec<_>, _>>()
            .map_err(StoreError::Sql)?;
        size += values
            .iter()
            .map(|v| v.as_ref().map_or(0, String::len) + VALUE_OVERHEAD)
            .sum::<usize>();
        if size > RESULT_LIMIT {
            return Err(StoreError::ResultTooLarge(RESULT_LIMIT));
        }
        out.push(values);
    }
    Ok(ResultSet { columns, rows: out })
}

impl Store {
    /// Runs one SQL statement (a trailing `;` is fine). Statements with result columns give
    /// [`SqlOutcome::Rows`], others [`SqlOutcome::Affected`]. SQLite's refusals (syntax, CHECK,
    /// UNIQUE...) come back as [`StoreError::Sql`] with SQLite's message.
    pub fn execute(&self, sql: &str) -> Result<SqlOutcome, StoreError> {
        self.time_limited(|| self.execute_unlimited(sql))
    }

    fn execute_unlimited(&self, sql: &str) -> Result<SqlOutcome, StoreError> {
        let mut stmt = self.conn.prepare(sql).map_err(|e| match e {
            rusqlite::Error::Empty => StoreError::EmptyQuery,
            e => StoreError::Sql(e),
        })?;
        if stmt.column_count() > 0 {
            return collect(stmt, &[]).map(SqlOutcome::Rows);
        }
        let before = self.conn.total_changes();
        stmt.raw_execute().map_err(StoreError::Sql)?;
        drop(stmt);
        // sqlite3_changes() keeps the count of the last INSERT/UPDATE/DELETE, so after a
        // CREATE or a PRAGMA it would report a stale number: trust it only when this statement
        // changed the total. The same holds for the last rowid.
        if self.conn.total_changes() == before {
            return Ok(SqlOutcome::Affected {
                rows: 0,
                last_insert_id: 0,
            });
        }
        let first_word = sql
            .trim_start()
            .split(|c: char| !c.is_ascii_alphabetic())
            .next()
            .unwrap_or("");
        let inserts = ["INSERT", "REPLACE"]
            .iter()
            .any(|w| w.eq_ignore_ascii_case(first_word));
        let last_insert_id = if inserts {
            u64::try_from(self.conn.last_insert_rowid()).unwrap_or(0)
        } else {
            0
        };
        Ok(SqlOutcome::Affected {
            rows: self.conn.changes(),
            last_insert_id,
        })
    }

    /// Replaces every row of `table` (e.g. `stats.stats_mysql_global`) with `rows`, values in
    /// column order (generated columns excluded), in one transaction.
    pub fn replace_rows(
        &self,
        table: &str,
        rows: &[Vec<rusqlite::types::Value>],
    ) -> Result<(), StoreError> {
        let (schema, name) = split_table_name(table)?;
        let qualified = match schema {
            Some(s) => format!("\"{s}\".\"{name}\""),
            None => format!("\"{name}\""),
        };
        let context = || format!("replacing the rows of {table}");
        // `table_xinfo` lists generated columns too (hidden 2 or 3): those cannot be written.
        let pragma = match schema {
            Some(s) => format!("PRAGMA \"{s}\".table_xinfo(\"{name}\")"),
            None => format!("PRAGMA table_xinfo(\"{name}\")"),
        };
        let columns: Vec<String> = {
            let mut stmt = self
                .conn
                .prepare(&pragma)
                .map_err(StoreError::sqlite(context()))?;
            let listed = stmt
                .query_map([], |r| {
                    Ok((r.get::<_, String>("name")?, r.get::<_, i64>("hidden")?))
                })
                .map_err(StoreError::sqlite(context()))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(StoreError::sqlite(context()))?;
            listed
                .into_iter()
                .filter(|(_, hidden)| *hidden == 0)
                .map(|(n, _)| format!("\"{n}\""))
                .collect()
        };
        if columns.is_empty() {
            return Err(StoreError::NoSuchTable(table.to_string()));
        }
        if let Some((row, values)) = rows
            .iter()
            .enumerate()
            .find(|(_, v)| v.len() != columns.len())
        {
            return Err(StoreError::RowWidth {
                table: table.to_string(),
                row,
                got: values.len(),
                expected: columns.len(),
            });
        }
        let tx = self
            .conn
            .unchecked_transaction()
            .map_err(StoreError::sqlite(context()))?;
        tx.execute(&format!("DELETE FROM {qualified}"), [])
            .map_err(StoreError::sqlite(context()))?;
        {
            let placeholders = vec!["?"; columns.len()].join(", ");
            let mut insert = tx
                .prepare(&format!(
                    "INSERT INTO {qualified} ({}) VALUES ({placeholders})",
                    columns.join(", ")
                ))
                .map_err(StoreError::sqlite(context()))?;
            for values in rows {
                insert
                    .execute(rusqlite::params_from_iter(values.iter()))
                    .map_err(StoreError::sqlite(context()))?;
            }
        }
        tx.commit().map_err(StoreError::sqlite(context()))
    }

    /// `SHOW DATABASES`: columns `seq`, `name`, `file`, as `PRAGMA database_list`.
    pub fn show_databases(&self) -> Result<ResultSet, StoreError> {
        query(&self.conn, "PRAGMA database_list", &[])
    }

    /// The attached schema names, in SQLite's name-resolution order.
    fn schemas(&self) -> Result<Vec<String>, StoreError> {
        Ok(self
            .show_databases()?
            .rows
            .into_iter()
            .filter_map(|row| row.into_iter().nth(1).flatten())
            .collect())
    }

    /// The attached schema named `name` (any case), as SQLite spells it.
    fn schema(&self, name: &str) -> Result<String, StoreError> {
        let wanted = unquote(name);
        self.schemas()?
            .into_iter()
            .find(|s| s.eq_ignore_ascii_case(wanted))
            .ok_or_else(|| StoreError::UnknownDatabase(wanted.to_string()))
    }

    /// `SHOW TABLES [FROM schema] [LIKE pattern]` (default `main`): one column `tables`,
    /// sorted names. The pattern is SQL LIKE's, case-insensitive, `\\` escaping.
    pub fn show_tables(
        &self,
        schema: Option<&str>,
        like: Option<&str>,
    ) -> Result<ResultSet, StoreError> {
        let schema = self.schema(schema.unwrap_or("main"))?;
        let mut rs = query(
            &self.conn,
            &format!(
                "SELECT name FROM \"{schema}\".sqlite_master \
                 WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' \
                 AND name LIKE ?1 ESCAPE '\\' ORDER BY name"
            ),
            &[like.unwrap_or("%")],
        )?;
        rs.columns = vec!["tables".to_string()];
        Ok(rs)
    }

    /// `SHOW CREATE TABLE [schema.]t`: columns `table` and `Create Table`. Without a schema
    /// the table is looked up as SQLite resolves unqualified names (`main` first).
    pub fn show_create_table(&self, name: &str) -> Result<ResultSet, StoreError> {
        self.about_table(name, |schema, table| {
            query(
                &self.conn,
                &format!(
                    "SELECT name AS \"table\", sql AS \"Create Table\" \
                     FROM \"{schema}\".sqlite_master \
                     WHERE type IN ('table', 'view') AND name = ?1 COLLATE NOCASE"
                ),
                &[table],
            )
        })
    }

    /// `DESCRIBE [schema.]t`: MySQL's columns (Field, Type, Null, Key, Default, Extra), one
    /// row per column of the table, looked up as [`Store::show_create_table`] does.
    pub fn describe(&self, name: &str) -> Result<ResultSet, StoreError> {
        self.about_table(name, |schema, table| {
            query(
                &self.conn,
                "SELECT name AS Field, type AS Type, \
                 CASE WHEN \"notnull\" = 1 OR pk > 0 THEN 'NO' ELSE 'YES' END AS \"Null\", \
                 CASE WHEN pk > 0 THEN 'PRI' ELSE '' END AS \"Key\", \
                 CASE WHEN dflt_value LIKE '''%''' \
                 THEN replace(substr(dflt_value, 2, length(dflt_value) - 2), '''''', '''') \
                 ELSE dflt_value END AS \"Default\", '' AS Extra \
                 FROM pragma_table_info(?1, ?2) ORDER BY cid",
                &[table, schema],
            )
        })
    }

    /// The first rows `read(schema, table)` finds about table `name` (`[schema.]t`), in its
    /// schema or else in each schema in SQLite's name-resolution order.
    fn about_table(
        &self,
        name: &str,
        read: impl Fn(&str, &str) -> Result<ResultSet, StoreError>,
    ) -> Result<ResultSet, StoreError> {
        let no_such = || StoreError::NoSuchTable(unquote(name).to_string());
        let (schema, table) = split_table_name(name).map_err(|_| no_such())?;
        let schemas = match schema {
            Some(s) => vec![self.schema(s)?],
            None => self.schemas()?,
        };
        for schema in schemas {
            let rs = read(&schema, table)?;
            if !rs.rows.is_empty() {
                return Ok(rs);
            }
        }
        Err(no_such())
    }
}
