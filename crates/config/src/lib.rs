//! weir's configuration: typed config tables, the variables registry, the TOML file and the
//! immutable [`Runtime`] snapshot that sessions read.
//!
//! Data flows one way: a TOML file (or, later, the admin store) yields [`ConfigTables`] — rows
//! shaped like ProxySQL's `mysql_*` tables plus `mysql-*`/`admin-*` [`Variables`] —, and
//! [`Runtime::build`] validates the whole set, collecting every error with its key path, and
//! compiles it into typed views ([`MysqlVariables`], [`AdminVariables`], user maps) used on the
//! hot path. No SQLite, no globals, no I/O besides reading the file in [`load_config_file`].
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod error;
mod file;
mod rows;
mod runtime;
mod typed;
mod vars;

pub use error::{ConfigError, ConfigErrors};
pub use file::{
    datadir_as_parsed, load_config_file, parse_config_str, tables_as_parsed, validate_file,
    ConfigFile,
};
pub use rows::{
    ConfigTables, Password, QueryRuleRow, ReplicationHostgroupRow, ServerRow, ServerStatus,
    UnknownStatus, UserRow, CHECK_TYPES,
};
pub use runtime::{Runtime, User};
pub use typed::{parse_credentials, parse_interfaces, AdminVariables, ListenAddr, MysqlVariables};
pub use vars::{VarKind, VarSpec, Variables, ADMIN_VARIABLE_SPECS, MYSQL_VARIABLE_SPECS};
