//! ProxySQL's statement commands (the rows of `stats_mysql_commands_counters`), found from the
//! first keywords of a statement that the scanner already holds.

/// The command of a statement, as ProxySQL names it in `stats_mysql_commands_counters`.
///
/// Finer than [`crate::StatementKind`], which only says what routing and multiplexing need:
/// every kind maps to one or more of these, and anything unrecognised is `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum SqlCommand {
    AlterTable,
    AlterView,
    AnalyzeTable,
    Begin,
    Call,
    ChangeMaster,
    Commit,
    CreateDatabase,
    CreateIndex,
    CreateTable,
    CreateTemporary,
    CreateTrigger,
    CreateUser,
    CreateView,
    Deallocate,
    Delete,
    Describe,
    DropDatabase,
    DropIndex,
    DropTable,
    DropTrigger,
    DropUser,
    DropView,
    Grant,
    Execute,
    Explain,
    Flush,
    Insert,
    Kill,
    Load,
    LockTable,
    Optimize,
    Prepare,
    Purge,
    ReleaseSavepoint,
    RenameTable,
    ResetMaster,
    ResetSlave,
    Replace,
    Revoke,
    Rollback,
    RollbackSavepoint,
    Savepoint,
    Select,
    SelectForUpdate,
    Set,
    ShowTableStatus,
    StartTransaction,
    TruncateTable,
    UnlockTables,
    Update,
    Use,
    Show,
    Unknown,
}

impl SqlCommand {
    /// Every command, in the order ProxySQL lists them (the discriminant is the index).
    pub const ALL: [SqlCommand; 54] = {
        use SqlCommand::*;
        [
            AlterTable,
            AlterView,
            AnalyzeTable,
            Begin,
            Call,
            ChangeMaster,
            Commit,
            CreateDatabase,
            CreateIndex,
            CreateTable,
            CreateTemporary,
            CreateTrigger,
            CreateUser,
            CreateView,
            Deallocate,
            Delete,
            Describe,
            DropDatabase,
            DropIndex,
            DropTable,
            DropTrigger,
            DropUser,
            DropView,
            Grant,
            Execute,
            Explain,
            Flush,
            Insert,
            Kill,
            Load,
            LockTable,
            Optimize,
            Prepare,
            Purge,
            ReleaseSavepoint,
            RenameTable,
            ResetMaster,
            ResetSlave,
            Replace,
            Revoke,
            Rollback,
            RollbackSavepoint,
            Savepoint,
            Select,
            SelectForUpdate,
            Set,
            ShowTableStatus,
            StartTransaction,
            TruncateTable,
            UnlockTables,
            Update,
            Use,
            Show,
            Unknown,
        ]
    };

    /// Number of commands.
    pub const COUNT: usize = Self::ALL.len();

    /// Position in [`SqlCommand::ALL`], for counter arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The name shown in the `Command` column.
    pub fn name(self) -> &'static str {
        use SqlCommand::*;
        match self {
            AlterTable => "ALTER_TABLE",
            AlterView => "ALTER_VIEW",
            AnalyzeTable => "ANALYZE_TABLE",
            Begin => "BEGIN",
            Call => "CALL",
            ChangeMaster => "CHANGE_MASTER",
            Commit => "COMMIT",
            CreateDatabase => "CREATE_DATABASE",
            CreateIndex => "CREATE_INDEX",
            CreateTable => "CREATE_TABLE",
            CreateTemporary => "CREATE_TEMPORARY",
            CreateTrigger => "CREATE_TRIGGER",
            CreateUser => "CREATE_USER",
            CreateView => "CREATE_VIEW",
            Deallocate => "DEALLOCATE",
            Delete => "DELETE",
            Describe => "DESCRIBE",
            DropDatabase => "DROP_DATABASE",
            DropIndex => "DROP_INDEX",
            DropTable => "DROP_TABLE",
            DropTrigger => "DROP_TRIGGER",
            DropUser => "DROP_USER",
            DropView => "DROP_VIEW",
            Grant => "GRANT",
            Execute => "EXECUTE",
            Explain => "EXPLAIN",
            Flush => "FLUSH",
            Insert => "INSERT",
            Kill => "KILL",
            Load => "LOAD",
            LockTable => "LOCK_TABLE",
            Optimize => "OPTIMIZE",
            Prepare => "PREPARE",
            Purge => "PURGE",
            ReleaseSavepoint => "RELEASE_SAVEPOINT",
            RenameTable => "RENAME_TABLE",
            ResetMaster => "RESET_MASTER",
            ResetSlave => "RESET_SLAVE",
            Replace => "REPLACE",
            Revoke => "REVOKE",
            Rollback => "ROLLBACK",
            RollbackSavepoint => "ROLLBACK_SAVEPOINT",
            Savepoint => "SAVEPOINT",
            Select => "SELECT",
            SelectForUpdate => "SELECT_FOR_UPDATE",
            Set => "SET",
            ShowTableStatus => "SHOW_TABLE_STATUS",
            StartTransaction => "START_TRANSACTION",
            TruncateTable => "TRUNCATE_TABLE",
            UnlockTables => "UNLOCK_TABLES",
            Update => "UPDATE",
            Use => "USE",
            Show => "SHOW",
            Unknown => "UNKNOWN",
        }
    }
}

fn eq(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

/// The first of `words` that names an object type CREATE / DROP / ALTER act on, skipping
/// modifiers (`UNIQUE INDEX`, `OR REPLACE VIEW`, `TEMPORARY TABLE`, `ALGORITHM=x VIEW`).
fn object<'a>(words: &[&'a [u8]]) -> &'a [u8] {
    const OBJECTS: [&str; 10] = [
        "DATABASE",
        "SCHEMA",
        "INDEX",
        "TABLE",
        "TEMPORARY",
        "TRIGGER",
        "USER",
        "VIEW",
        "PREPARE",
        "TABLES",
    ];
    words
        .iter()
        .copied()
        .find(|w| OBJECTS.iter().any(|o| eq(w, o)))
        .unwrap_or_default()
}

/// The command of a statement from its first (up to four) words; `for_update` says a
/// `FOR UPDATE` clause was seen in it.
pub(crate) fn command_of(words: &[&[u8]], for_update: bool) -> SqlCommand {
    use SqlCommand as C;
    let w = |i: usize| words.get(i).copied().unwrap_or_default();
    let w0 = w(0);
    let w1 = w(1);
    let rest = words.get(1..).unwrap_or_default();
    match w0.first().map(u8::to_ascii_uppercase) {
        Some(b'S') => match () {
            _ if eq(w0, "SELECT") && for_update => C::SelectForUpdate,
            _ if eq(w0, "SELECT") => C::Select,
            _ if eq(w0, "SET") => C::Set,
            _ if eq(w0, "SHOW") && eq(w1, "TABLE") && eq(w(2), "STATUS") => C::ShowTableStatus,
            _ if eq(w0, "SHOW") => C::Show,
            _ if eq(w0, "START") && eq(w1, "TRANSACTION") => C::StartTransaction,
            _ if eq(w0, "SAVEPOINT") => C::Savepoint,
            _ => C::Unknown,
        },
        Some(b'I') if eq(w0, "INSERT") => C::Insert,
        Some(b'U') => match () {
            _ if eq(w0, "UPDATE") => C::Update,
            _ if eq(w0, "USE") => C::Use,
            _ if eq(w0, "UNLOCK") => C::UnlockTables,
            _ => C::Unknown,
        },
        Some(b'D') => match () {
            _ if eq(w0, "DELETE") => C::Delete,
            _ if eq(w0, "DESCRIBE") || eq(w0, "DESC") => C::Describe,
            _ if eq(w0, "DEALLOCATE") => C::Deallocate,
            _ if eq(w0, "DROP") => {
                let o = object(rest);
                match () {
                    _ if eq(o, "DATABASE") || eq(o, "SCHEMA") => C::DropDatabase,
                    _ if eq(o, "INDEX") => C::DropIndex,
                    _ if eq(o, "TABLE") || eq(o, "TEMPORARY") => C::DropTable,
                    _ if eq(o, "TRIGGER") => C::DropTrigger,
                    _ if eq(o, "USER") => C::DropUser,
                    _ if eq(o, "VIEW") => C::DropView,
                    _ if eq(o, "PREPARE") => C::Deallocate,
                    _ => C::Unknown,
                }
            }
            _ => C::Unknown,
        },
        Some(b'W' | b'V' | b'T') if eq(w0, "WITH") || eq(w0, "VALUES") || eq(w0, "TABLE") => {
            if for_update {
                C::SelectForUpdate
            } else {
                C::Select
            }
        }
        Some(b'T') if eq(w0, "TRUNCATE") => C::TruncateTable,
        Some(b'B') if eq(w0, "BEGIN") => C::Begin,
        Some(b'C') => match () {
            _ if eq(w0, "COMMIT") => C::Commit,
            _ if eq(w0, "CALL") => C::Call,
            _ if eq(w0, "CHANGE") && eq(w1, "MASTER") => C::ChangeMaster,
            _ if eq(w0, "CREATE") => {
                let o = object(rest);
                match () {
                    _ if eq(o, "DATABASE") || eq(o, "SCHEMA") => C::CreateDatabase,
                    _ if eq(o, "INDEX") => C::CreateIndex,
                    _ if eq(o, "TABLE") => C::CreateTable,
                    _ if eq(o, "TEMPORARY") => C::CreateTemporary,
                    _ if eq(o, "TRIGGER") => C::CreateTrigger,
                    _ if eq(o, "USER") => C::CreateUser,
                    _ if eq(o, "VIEW") => C::CreateView,
                    _ => C::Unknown,
                }
            }
            _ => C::Unknown,
        },
        Some(b'R') => match () {
            _ if eq(w0, "REPLACE") => C::Replace,
            _ if eq(w0, "ROLLBACK") && (eq(w1, "TO") || (eq(w1, "WORK") && eq(w(2), "TO"))) => {
                C::RollbackSavepoint
            }
            _ if eq(w0, "ROLLBACK") => C::Rollback,
            _ if eq(w0, "RELEASE") && eq(w1, "SAVEPOINT") => C::ReleaseSavepoint,
            _ if eq(w0, "RENAME") && (eq(w1, "TABLE") || eq(w1, "TABLES")) => C::RenameTable,
            _ if eq(w0, "RESET") && eq(w1, "MASTER") => C::ResetMaster,
            _ if eq(w0, "RESET") && (eq(w1, "SLAVE") || eq(w1, "REPLICA")) => C::ResetSlave,
            _ if eq(w0, "REVOKE") => C::Revoke,
            _ => C::Unknown,
        },
        Some(b'A') => match () {
            _ if eq(w0, "ALTER") && eq(object(rest), "VIEW") => C::AlterView,
            _ if eq(w0, "ALTER") && eq(object(rest), "TABLE") => C::AlterTable,
            _ if eq(w0, "ANALYZE") => C::AnalyzeTable,
            _ => C::Unknown,
        },
        Some(b'E') => match () {
            _ if eq(w0, "EXECUTE") => C::Execute,
            _ if eq(w0, "EXPLAIN") => C::Explain,
            _ => C::Unknown,
        },
        Some(b'P') => match () {
            _ if eq(w0, "PREPARE") => C::Prepare,
            _ if eq(w0, "PURGE") => C::Purge,
            _ => C::Unknown,
        },
        Some(b'L') => match () {
            _ if eq(w0, "LOCK") => C::LockTable,
            _ if eq(w0, "LOAD") => C::Load,
            _ => C::Unknown,
        },
        Some(b'K') if eq(w0, "KILL") => C::Kill,
        Some(b'F') if eq(w0, "FLUSH") => C::Flush,
        Some(b'G') if eq(w0, "GRANT") => C::Grant,
        Some(b'O') if eq(w0, "OPTIMIZE") => C::Optimize,
        Some(b'H') if eq(w0, "HELP") => C::Show,
        _ => C::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan;

    #[test]
    fn all_is_indexed_by_discriminant() {
        for (i, c) in SqlCommand::ALL.iter().enumerate() {
            assert_eq!(c.index(), i, "{c:?}");
        }
        let mut names: Vec<_> = SqlCommand::ALL.iter().map(|c| c.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SqlCommand::COUNT);
    }

    #[test]
    fn commands() {
        use SqlCommand as C;
        let cases: &[(&str, SqlCommand)] = &[
            ("select 1", C::Select),
            ("  /* c */ SELECT c FROM t WHERE id=1", C::Select),
            ("(select 1) union (select 2)", C::Select),
            ("with x as (select 1) select * from x", C::Select),
            (
                "SELECT * FROM t WHERE id = 1 FOR UPDATE",
                C::SelectForUpdate,
            ),
            ("select 'for update' from t", C::Select),
            ("select `for`, `update` from t", C::Select),
            ("select 1; select 2 for update", C::Select),
            ("insert into t values (1)", C::Insert),
            ("replace into t values (1)", C::Replace),
            ("update t set a = 1", C::Update),
            ("delete from t", C::Delete),
            ("begin", C::Begin),
            ("start transaction read only", C::StartTransaction),
            ("commit", C::Commit),
            ("rollback", C::Rollback),
            ("rollback to savepoint a", C::RollbackSavepoint),
            ("rollback work to a", C::RollbackSavepoint),
            ("savepoint a", C::Savepoint),
            ("release savepoint a", C::ReleaseSavepoint),
            ("set autocommit=0", C::Set),
            ("use db", C::Use),
            ("show tables", C::Show),
            ("show table status like 'x'", C::ShowTableStatus),
            ("describe t", C::Describe),
            ("desc t", C::Describe),
            ("explain select 1", C::Explain),
            ("help 'x'", C::Show),
            ("kill 3", C::Kill),
            ("call p()", C::Call),
            ("lock tables t write", C::LockTable),
            ("unlock tables", C::UnlockTables),
            ("flush tables with read lock", C::Flush),
            ("create table t (a int)", C::CreateTable),
            ("create temporary table t (a int)", C::CreateTemporary),
            ("create unique index i on t (a)", C::CreateIndex),
            ("create or replace view v as select 1", C::CreateView),
            ("create database d", C::CreateDatabase),
            ("create schema d", C::CreateDatabase),
            (
                "create trigger tr before insert on t for each row set @a=1",
                C::CreateTrigger,
            ),
            ("create user u", C::CreateUser),
            ("drop table t", C::DropTable),
            ("drop temporary table if exists t", C::DropTable),
            ("drop index i on t", C::DropIndex),
            ("drop database d", C::DropDatabase),
            ("drop view v", C::DropView),
            ("drop trigger tr", C::DropTrigger),
            ("drop user u", C::DropUser),
            ("drop prepare s", C::Deallocate),
            ("deallocate prepare s", C::Deallocate),
            ("prepare s from 'select 1'", C::Prepare),
            ("execute s", C::Execute),
            ("alter table t add c int", C::AlterTable),
            ("alter online table t add c int", C::AlterTable),
            ("alter view v as select 1", C::AlterView),
            ("analyze table t", C::AnalyzeTable),
            ("optimize table t", C::Optimize),
            ("truncate t", C::TruncateTable),
            ("truncate table t", C::TruncateTable),
            ("rename table a to b", C::RenameTable),
            ("load data infile 'x' into table t", C::Load),
            ("purge binary logs to 'x'", C::Purge),
            ("reset master", C::ResetMaster),
            ("reset slave", C::ResetSlave),
            ("change master to master_host='x'", C::ChangeMaster),
            ("grant select on *.* to u", C::Grant),
            ("revoke select on *.* from u", C::Revoke),
            ("do 1", C::Unknown),
            ("", C::Unknown),
            ("'x'", C::Unknown),
        ];
        for (q, want) in cases {
            assert_eq!(scan(q.as_bytes()).command, *want, "{q}");
        }
    }
}
