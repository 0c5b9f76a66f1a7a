//! Protocol constants: capability flags, status flags, commands, error codes.

/// Capability flags (the low 32 bits of the MySQL capability set).
pub mod cap {
    pub const LONG_PASSWORD: u32 = 1;
    pub const FOUND_ROWS: u32 = 1 << 1;
    pub const LONG_FLAG: u32 = 1 << 2;
    pub const CONNECT_WITH_DB: u32 = 1 << 3;
    pub const NO_SCHEMA: u32 = 1 << 4;
    pub const COMPRESS: u32 = 1 << 5;
    pub const ODBC: u32 = 1 << 6;
    pub const LOCAL_FILES: u32 = 1 << 7;
    pub const IGNORE_SPACE: u32 = 1 << 8;
    pub const PROTOCOL_41: u32 = 1 << 9;
    pub const INTERACTIVE: u32 = 1 << 10;
    pub const SSL: u32 = 1 << 11;
    pub const IGNORE_SIGPIPE: u32 = 1 << 12;
    pub const TRANSACTIONS: u32 = 1 << 13;
    pub const RESERVED: u32 = 1 << 14;
    pub const SECURE_CONNECTION: u32 = 1 << 15;
    pub const MULTI_STATEMENTS: u32 = 1 << 16;
    pub const MULTI_RESULTS: u32 = 1 << 17;
    pub const PS_MULTI_RESULTS: u32 = 1 << 18;
    pub const PLUGIN_AUTH: u32 = 1 << 19;
    pub const CONNECT_ATTRS: u32 = 1 << 20;
    pub const PLUGIN_AUTH_LENENC_CLIENT_DATA: u32 = 1 << 21;
    pub const CAN_HANDLE_EXPIRED_PASSWORDS: u32 = 1 << 22;
    pub const SESSION_TRACK: u32 = 1 << 23;
    pub const DEPRECATE_EOF: u32 = 1 << 24;
}

/// MariaDB's extended capabilities (the upper 32 bits of its capability set), exchanged when
/// the server's greeting clears [`cap::LONG_PASSWORD`] ("CLIENT_MYSQL") and the client's
/// response does too.
pub mod mariadb_cap {
    /// Column definitions carry a type name and format (`json`, `uuid`, `inet6`, ...) after
    /// `org_name`.
    pub const EXTENDED_METADATA: u32 = 1 << 3;
}

/// Server status flags carried by OK and EOF packets.
pub mod status {
    pub const IN_TRANS: u16 = 0x0001;
    pub const AUTOCOMMIT: u16 = 0x0002;
    pub const MORE_RESULTS_EXISTS: u16 = 0x0008;
    pub const NO_GOOD_INDEX_USED: u16 = 0x0010;
    pub const NO_INDEX_USED: u16 = 0x0020;
    pub const CURSOR_EXISTS: u16 = 0x0040;
    pub const LAST_ROW_SENT: u16 = 0x0080;
    pub const DB_DROPPED: u16 = 0x0100;
    pub const NO_BACKSLASH_ESCAPES: u16 = 0x0200;
    pub const METADATA_CHANGED: u16 = 0x0400;
    pub const QUERY_WAS_SLOW: u16 = 0x0800;
    pub const PS_OUT_PARAMS: u16 = 0x1000;
    pub const IN_TRANS_READONLY: u16 = 0x2000;
    pub const SESSION_STATE_CHANGED: u16 = 0x4000;
    /// MariaDB: the session's sql_mode has ANSI_QUOTES.
    pub const ANSI_QUOTES: u16 = 0x8000;
    /// The flags that describe the session's sql_mode rather than a statement.
    pub const SQL_MODE_FLAGS: u16 = NO_BACKSLASH_ESCAPES | ANSI_QUOTES;
}

/// Command bytes (first payload byte of a client request).
pub mod com {
    pub const SLEEP: u8 = 0x00;
    pub const QUIT: u8 = 0x01;
    pub const INIT_DB: u8 = 0x02;
    pub const QUERY: u8 = 0x03;
    pub const FIELD_LIST: u8 = 0x04;
    pub const CREATE_DB: u8 = 0x05;
    pub const DROP_DB: u8 = 0x06;
    pub const REFRESH: u8 = 0x07;
    pub const SHUTDOWN: u8 = 0x08;
    pub const STATISTICS: u8 = 0x09;
    pub const PROCESS_INFO: u8 = 0x0a;
    pub const CONNECT: u8 = 0x0b;
    pub const PROCESS_KILL: u8 = 0x0c;
    pub const DEBUG: u8 = 0x0d;
    pub const PING: u8 = 0x0e;
    pub const TIME: u8 = 0x0f;
    pub const DELAYED_INSERT: u8 = 0x10;
    pub const CHANGE_USER: u8 = 0x11;
    pub const BINLOG_DUMP: u8 = 0x12;
    pub const TABLE_DUMP: u8 = 0x13;
    pub const CONNECT_OUT: u8 = 0x14;
    pub const REGISTER_SLAVE: u8 = 0x15;
    pub const STMT_PREPARE: u8 = 0x16;
    pub const STMT_EXECUTE: u8 = 0x17;
    pub const STMT_SEND_LONG_DATA: u8 = 0x18;
    pub const STMT_CLOSE: u8 = 0x19;
    pub const STMT_RESET: u8 = 0x1a;
    pub const SET_OPTION: u8 = 0x1b;
    pub const STMT_FETCH: u8 = 0x1c;
    pub const DAEMON: u8 = 0x1d;
    pub const BINLOG_DUMP_GTID: u8 = 0x1e;
    pub const RESET_CONNECTION: u8 = 0x1f;

    /// Human name of a command byte, for logs and errors.
    pub fn name(cmd: u8) -> &'static str {
        match cmd {
            SLEEP => "COM_SLEEP",
            QUIT => "COM_QUIT",
            INIT_DB => "COM_INIT_DB",
            QUERY => "COM_QUERY",
            FIELD_LIST => "COM_FIELD_LIST",
            CREATE_DB => "COM_CREATE_DB",
            DROP_DB => "COM_DROP_DB",
            REFRESH => "COM_REFRESH",
            SHUTDOWN => "COM_SHUTDOWN",
            STATISTICS => "COM_STATISTICS",
            PROCESS_INFO => "COM_PROCESS_INFO",
            CONNECT => "COM_CONNECT",
            PROCESS_KILL => "COM_PROCESS_KILL",
            DEBUG => "COM_DEBUG",
            PING => "COM_PING",
            TIME => "COM_TIME",
            DELAYED_INSERT => "COM_DELAYED_INSERT",
            CHANGE_USER => "COM_CHANGE_USER",
            BINLOG_DUMP => "COM_BINLOG_DUMP",
            TABLE_DUMP => "COM_TABLE_DUMP",
            CONNECT_OUT => "COM_CONNECT_OUT",
            REGISTER_SLAVE => "COM_REGISTER_SLAVE",
            STMT_PREPARE => "COM_STMT_PREPARE",
            STMT_EXECUTE => "COM_STMT_EXECUTE",
            STMT_SEND_LONG_DATA => "COM_STMT_SEND_LONG_DATA",
            STMT_CLOSE => "COM_STMT_CLOSE",
            STMT_RESET => "COM_STMT_RESET",
            SET_OPTION => "COM_SET_OPTION",
            STMT_FETCH => "COM_STMT_FETCH",
            DAEMON => "COM_DAEMON",
            BINLOG_DUMP_GTID => "COM_BINLOG_DUMP_GTID",
            RESET_CONNECTION => "COM_RESET_CONNECTION",
            _ => "COM_UNKNOWN",
        }
    }
}

/// Error codes weir sends, with their SQLSTATE.
pub mod errcode {
    pub const ER_CON_COUNT_ERROR: u16 = 1040;
    pub const ER_HANDSHAKE_ERROR: u16 = 1043;
    pub const ER_ACCESS_DENIED_ERROR: u16 = 1045;
    pub const ER_NO_DB_ERROR: u16 = 1046;
    pub const ER_UNKNOWN_COM_ERROR: u16 = 1047;
    pub const ER_BAD_DB_ERROR: u16 = 1049;
    /// A schema name over 64 characters (SQLSTATE 42000).
    pub const ER_WRONG_DB_NAME: u16 = 1102;
    /// A value a variable cannot take (SQLSTATE 42000).
    pub const ER_WRONG_VALUE_FOR_VAR: u16 = 1231;
    pub const ER_SERVER_SHUTDOWN: u16 = 1053;
    pub const ER_NET_PACKET_TOO_LARGE: u16 = 1153;
    pub const ER_NET_READ_ERROR: u16 = 1158;
    pub const ER_NET_READ_INTERRUPTED: u16 = 1159;
    pub const ER_NET_PACKETS_OUT_OF_ORDER: u16 = 1156;
    /// The code ProxySQL answers a query refused by a rule's error_msg with.
    pub const ER_NOT_ALLOWED_COMMAND: u16 = 1148;
    /// MariaDB: LOAD DATA LOCAL from a client without CLIENT_LOCAL_FILES.
    pub const ER_LOAD_INFILE_CAPABILITY_DISABLED: u16 = 4166;
    /// MySQL: LOAD DATA LOCAL from a client without CLIENT_LOCAL_FILES.
    pub const ER_CLIENT_LOCAL_FILES_DISABLED: u16 = 3948;
    pub const ER_NO_SUCH_THREAD: u16 = 1094;
    pub const ER_KILL_DENIED_ERROR: u16 = 1095;
    pub const ER_UNKNOWN_STMT_HANDLER: u16 = 1243;
    /// The server's code for errors without one of their own (long data over
    /// max_allowed_packet, among others).
    pub const ER_UNKNOWN_ERROR: u16 = 1105;
    /// More prepared statements than max_prepared_stmt_count.
    pub const ER_MAX_PREPARED_STMT_COUNT_REACHED: u16 = 1461;
    /// Incorrect arguments (a prepared statement's long data for a parameter it lacks).
    pub const ER_WRONG_ARGUMENTS: u16 = 1210;
    /// COM_STMT_FETCH of a statement without an open cursor.
    pub const ER_STMT_HAS_NO_OPEN_CURSOR: u16 = 1421;
    pub const ER_QUERY_INTERRUPTED: u16 = 1317;
    /// MariaDB's ER_CONNECTION_KILLED (SQLSTATE 70100): the answer to killing oneself.
    pub const ER_CONNECTION_KILLED: u16 = 1927;
    /// MariaDB's ER_STATEMENT_TIMEOUT (SQLSTATE 70100), which ProxySQL also answers a query
    /// killed by its query timeout with.
    pub const ER_STATEMENT_TIMEOUT: u16 = 1907;
    pub const ER_MALFORMED_PACKET: u16 = 1835;
    pub const ER_NOT_SUPPORTED_YET: u16 = 1235;
    /// A backend connection lost mid-statement: ER_NET_READ_ERROR (SQLSTATE 08S01), a
    /// server-side code. Not CR_SERVER_LOST (2013): libmariadb turns an ERR packet carrying
    /// a client-library code (2000-2999, 5000-5999) into "Received malformed packet".
    pub const ER_LOST_BACKEND: u16 = 1158;
    /// ProxySQL's "Max connect timeout reached while reaching hostgroup".
    pub const ER_PROXY_NO_BACKEND: u16 = 9001;
}

/// Binary protocol column types.
pub mod coltype {
    pub const DECIMAL: u8 = 0x00;
    pub const TINY: u8 = 0x01;
    pub const SHORT: u8 = 0x02;
    pub const LONG: u8 = 0x03;
    pub const FLOAT: u8 = 0x04;
    pub const DOUBLE: u8 = 0x05;
    pub const NULL: u8 = 0x06;
    pub const TIMESTAMP: u8 = 0x07;
    pub const LONGLONG: u8 = 0x08;
    pub const INT24: u8 = 0x09;
    pub const DATE: u8 = 0x0a;
    pub const TIME: u8 = 0x0b;
    pub const DATETIME: u8 = 0x0c;
    pub const YEAR: u8 = 0x0d;
    pub const VARCHAR: u8 = 0x0f;
    pub const BIT: u8 = 0x10;
    pub const JSON: u8 = 0xf5;
    pub const NEWDECIMAL: u8 = 0xf6;
    pub const ENUM: u8 = 0xf7;
    pub const SET: u8 = 0xf8;
    pub const TINY_BLOB: u8 = 0xf9;
    pub const MEDIUM_BLOB: u8 = 0xfa;
    pub const LONG_BLOB: u8 = 0xfb;
    pub const BLOB: u8 = 0xfc;
    pub const VAR_STRING: u8 = 0xfd;
    pub const STRING: u8 = 0xfe;
    pub const GEOMETRY: u8 = 0xff;
}
