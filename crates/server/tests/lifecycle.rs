//! Failures and lifecycle: dead clients, dead backends, unusable hostgroups, limits, shutdown,
//! bounded memory, the CLI tools.
#![allow(clippy::unwrap_used)]
mod common;
use common::raw::{err_code, RawClient};
use mysql_async::prelude::*;
use mysql_async::Conn;
use std::process::Command;
use std::time::{Duration, Instant};
use weir_testkit::{require_binary, WEIR_PASS, WEIR_USER};
use weir_wire::reply::Expect;

fn mariadb_cmd(port: u16) -> Command {
    let mut c = Command::new(require_binary("mariadb"));
    c.args(["-h", "127.0.0.1", "-P", &port.to_string(), "-u", WEIR_USER])
        .arg(format!("-p{WEIR_PASS}"))
        .args(["--protocol=TCP", "--ssl=0"]);
    c
}

fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        // Slow enough for information_schema.innodb_trx to refresh (see below).
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// LOAD DATA LOCAL INFILE with the mariadb CLI: refused by default
/// (mysql-enable_load_data_local_infile = false) with the server's error and nothing loaded,
/// relayed when enabled.
#[test]
fn load_data_local_infile() {
    let dir = weir_testkit::scratch_dir("infile").unwrap();
    let file = dir.join("rows.csv");
    let data: String = (1..=5000).map(|i| format!("{i},name{i}\n")).collect();
    std::fs::write(&file, data).unwrap();
    let sql = format!(
        "CREATE TABLE IF NOT EXISTS weirtest.infile (id INT PRIMARY KEY, name VARCHAR(20)); \
         DELETE FROM weirtest.infile; \
         LOAD DATA LOCAL INFILE '{}' INTO TABLE weirtest.infile FIELDS TERMINATED BY ','; \
         SELECT COUNT(*), SUM(id) FROM weirtest.infile",
        file.display()
    );
    let load = |port| {
        mariadb_cmd(port)
            .args(["--local-infile=1", "-N", "-e", &sql])
            .output()
            .unwrap()
    };
    let refused = load(common::weir().port);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("ERROR 4166"), "{stderr}");
    let count = common::topo()
        .primary
        .query_rows("SELECT COUNT(*) FROM weirtest.infile")
        .unwrap();
    assert_eq!(count[0][0], "0", "nothing loaded");
    let w = common::admin::start("enable_load_data_local_infile = true");
    let out = load(w.port);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "5000\t12502500"
    );
}

#[test]
fn killed_client_leaves_no_open_transaction() {
    let primary = &common::topo().primary;
    primary
        .exec("CREATE TABLE IF NOT EXISTS weirtest.orphan (id INT PRIMARY KEY) ENGINE=InnoDB")
        .unwrap();
    primary.exec("DELETE FROM weirtest.orphan").unwrap();
    let mut child = mariadb_cmd(common::weir().port)
        .args([
            "-e",
            "BEGIN; INSERT INTO weirtest.orphan VALUES (777); SELECT SLEEP(30);",
        ])
        .spawn()
        .unwrap();
    let trx = || {
        primary
            .query_value("SELECT COUNT(*) FROM information_schema.innodb_trx")
            .unwrap()
    };
    let t = Instant::now();
    while trx() == "0" {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "the client ended early ({status}); weir says:\n{}",
                common::weir().stderr_tail(20)
            );
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the transaction never opened: {:?}\n{:?}\n{:?}\n{}",
            primary.query_rows(
                "SELECT ID, USER, COMMAND, TIME, INFO FROM information_schema.PROCESSLIST"
            ),
            primary.query_rows("SELECT * FROM information_schema.innodb_trx"),
            primary.query_rows("SELECT * FROM weirtest.orphan"),
            common::weir().stderr_tail(20)
        );
        // information_schema.innodb_trx is a cache that InnoDB refreshes only after 100 ms
        // without readers: polling faster would read the same stale snapshot forever.
        std::thread::sleep(Duration::from_millis(250));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    std::thread::sleep(Duration::from_millis(250));
    wait_until(
        "the transaction to roll back",
        Duration::from_secs(10),
        || trx() == "0",
    );
    assert_eq!(
        primary
            .query_value("SELECT COUNT(*) FROM weirtest.orphan WHERE id = 777")
            .unwrap(),
        "0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_backend_connection_gives_error_then_recovers() {
    // Without retries: with the default (1) weir re-runs the statement on another connection
    // (tests/rules_actions.rs covers that).
    let w = common::start_weir("query_retries_on_failure = 0");
    let mut c = Conn::new(common::opts_for(
        w.port,
        WEIR_USER,
        WEIR_PASS,
        Some("weirtest"),
    ))
    .await
    .unwrap();
    let primary = &common::topo().primary;
    let q = tokio::spawn(async move {
        let r: Result<Option<i64>, _> = c
            .query_first("SELECT SLEEP(20) AS killed_backend_test")
            .await;
        (r, c)
    });
    let mut id = String::new();
    wait_until("the query on the backend", Duration::from_secs(10), || {
        id = primary
            .query_value("SELECT COALESCE(MAX(ID), '') FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(20) AS killed%'")
            .unwrap();
        !id.is_empty()
    });
    primary.exec(&format!("KILL {id}")).unwrap();
    let (r, mut c) = q.await.unwrap();
    let e = r.unwrap_err().to_string();
    assert!(e.contains("1158") && e.contains("Lost connection"), "{e}");
    let v: Option<i64> = c.query_first("SELECT 3").await.unwrap();
    assert_eq!(v, Some(3));

    // libmariadb (the mariadb CLI, Python's mysqlclient, PHP) refuses client-range error codes
    // from a server as a malformed packet: the DBA must see weir's words, not ERROR 2027.
    let port = w.port;
    let cli = std::thread::spawn(move || {
        std::process::Command::new(weir_testkit::require_binary("mariadb"))
            .args(["-h", "127.0.0.1", "--protocol=TCP", "--ssl=0"])
            .arg(format!("-P{port}"))
            .arg(format!("-u{WEIR_USER}"))
            .arg(format!("-p{WEIR_PASS}"))
            .args(["-e", "SELECT SLEEP(20) AS killed_cli_test"])
            .output()
            .unwrap()
    });
    let mut id = String::new();
    wait_until(
        "the CLI's query on the backend",
        Duration::from_secs(10),
        || {
            id = primary
            .query_value("SELECT COALESCE(MAX(ID), '') FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(20) AS killed_cli%'")
            .unwrap();
            !id.is_empty()
        },
    );
    primary.exec(&format!("KILL {id}")).unwrap();
    let out = cli.join().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ERROR 1158 (08S01)") && stderr.contains("Lost connection to backend"),
        "{stderr}"
    );
}

#[test]
fn no_usable_server_gives_9001_after_the_wait() {
    // The users' default hostgroup 5 has no servers.
    let port = weir_testkit::free_port();
    let cfg = weir_testkit::weir_config(
        common::topo(),
        port,
        0,
        "connect_timeout_server_max = 700\nconnect_timeout_server = 200",
    )
    .replace("default_hostgroup = 0", "default_hostgroup = 5");
    let w = weir_testkit::WeirProcess::spawn(&common::weir_bin(), &cfg).unwrap();
    let (mut c, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(p[0], 0, "login needs no backend");
    let t = Instant::now();
    let r = c.query("SELECT 1");
    let msg = String::from_utf8_lossy(&r[0][9..]).into_owned();
    assert_eq!(err_code(&r[0]), Some(9001), "{msg}");
    assert!(
        msg.starts_with("Max connect timeout reached while reaching hostgroup 5 after"),
        "{msg}"
    );
    assert!(
        t.elapsed() >= Duration::from_millis(650),
        "{:?}",
        t.elapsed()
    );
    let r = c.command(&[0x0e], weir_wire::reply::Expect::Status);
    assert_eq!(r[0][0], 0, "the connection stays usable");
}

/// A server that takes the TCP connection and never greets: a statement's whole wait for a
/// connection is bounded by connect_timeout_server_max even when one connect may take longer
/// (connect_timeout_server). Before, the connect ran its full 3 s past a 0.8 s budget.
#[test]
fn a_connect_to_a_silent_server_ends_at_the_statements_deadline() {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().flatten() {
            held.push(s);
        }
    });
    let port = weir_testkit::free_port();
    let cfg = weir_testkit::weir_config(
        common::topo(),
        port,
        0,
        "connect_timeout_server_max = 800\nconnect_timeout_server = 3000",
    )
    .replace("default_hostgroup = 0", "default_hostgroup = 5")
        + &format!(
            "\n[[mysql_servers]]\nhostgroup_id = 5\nhostname = \"127.0.0.1\"\nport = {silent_port}\n"
        );
    let w = weir_testkit::WeirProcess::spawn(&common::weir_bin(), &cfg).unwrap();
    let (mut c, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    let t = Instant::now();
    let r = c.query("SELECT 1");
    let waited = t.elapsed();
    let msg = String::from_utf8_lossy(&r[0][9..]).into_owned();
    assert_eq!(err_code(&r[0]), Some(9001), "{msg}");
    assert!(
        waited >= Duration::from_millis(750) && waited < Duration::from_millis(2500),
        "waited {waited:?} with connect_timeout_server_max = 800: {msg}"
    );
}

#[tokio::test]
async fn max_connections_per_user_and_global() {
    let w = common::admin::start("max_connections = 3");
    let e = Conn::new(common::opts_for(w.port, WEIR_USER, "wrong", None))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("1045") || e.contains("Access denied"), "{e}");
    // The refused client counts until its session has ended, which may come just after the
    // client read its error.
    wait_until(
        "the refused client to leave",
        Duration::from_secs(5),
        || {
            common::admin::value(
            &w,
            "SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = 'Client_Connections_connected'",
        ) == "0"
        },
    );
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(
            Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None))
                .await
                .unwrap(),
        );
    }
    let e = Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("1040") || e.contains("Too many connections"),
        "{e}"
    );
    // Both refusals are counted where ProxySQL counts them.
    let rows = common::admin::table(
        &w,
        "SELECT Variable_Name, Variable_Value FROM stats_mysql_global WHERE Variable_Name LIKE 'Access_Denied%'",
    );
    let value = |name: &str| {
        rows.iter()
            .find(|r| r["Variable_Name"] == name)
            .map(|r| r["Variable_Value"].clone())
    };
    assert_eq!(
        value("Access_Denied_Max_Connections").as_deref(),
        Some("1"),
        "{rows:?}"
    );
    assert_eq!(
        value("Access_Denied_Wrong_Password").as_deref(),
        Some("1"),
        "{rows:?}"
    );
    assert_eq!(
        value("Access_Denied_Max_User_Connections").as_deref(),
        Some("0"),
        "{rows:?}"
    );
    drop(held);
}

#[tokio::test]
async fn max_connections_of_one_user() {
    // The first user block of the generated config is `weir`: give it max_connections = 2.
    let port = weir_testkit::free_port();
    let cfg = weir_testkit::weir_config(common::topo(), port, 0, "").replacen(
        "default_hostgroup = 0\n",
        "default_hostgroup = 0\nmax_connections = 2\n",
        1,
    );
    let w = weir_testkit::WeirProcess::spawn(&common::weir_bin(), &cfg).unwrap();
    let a = Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None))
        .await
        .unwrap();
    let b = Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None))
        .await
        .unwrap();
    let e = Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("1040") && e.contains("'weir'"), "{e}");
    // Another user is not affected, and a freed slot can be taken again.
    let mut ed = Conn::new(common::opts_for(
        w.port,
        weir_testkit::ED_USER,
        weir_testkit::ED_PASS,
        None,
    ))
    .await
    .unwrap();
    ed.ping().await.unwrap();
    a.disconnect().await.unwrap();
    let mut c = None;
    for _ in 0..50 {
        // The slot is released when weir notices the disconnect.
        if let Ok(conn) = Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None)).await {
            c = Some(conn);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(c.is_some(), "the freed slot was never given back");
    drop(b);
}

#[test]
fn unix_socket_listener() {
    let dir = weir_testkit::scratch_dir("sock").unwrap();
    let sock = dir.join("weir.sock");
    let port = weir_testkit::free_port();
    let w = common::start_weir(&format!(
        "interfaces = \"127.0.0.1:{port};{}\"",
        sock.display()
    ));
    let out = Command::new(require_binary("mariadb"))
        .args(["-S", sock.to_str().unwrap(), "-u", WEIR_USER])
        .arg(format!("-p{WEIR_PASS}"))
        .args(["-N", "-e", "SELECT 40 + 2"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        w.stderr_tail(20)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "42");
}

#[test]
fn graceful_shutdown_lets_statements_finish() {
    let mut w = common::start_weir("");
    let child = mariadb_cmd(w.port)
        // A reply far larger than a socket takes at once: weir's writes wait on the client
        // while it shuts down, and must still deliver all of it.
        .args([
            "-N",
            "-e",
            "SELECT SLEEP(1.5), 'finished', REPEAT('x', 8000000), 'whole'",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(
        "the statement on the backend",
        Duration::from_secs(10),
        || {
            common::topo()
            .primary
            .query_value("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'SELECT SLEEP(1.5)%'")
            .unwrap()
            != "0"
        },
    );
    let status = w.terminate(Duration::from_secs(15)).unwrap();
    assert!(
        status.success(),
        "exit status {status}\n{}",
        w.stderr_tail(20)
    );
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("finished") && stdout.trim_end().ends_with("whole"),
        "{} bytes: {}",
        stdout.len(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!w.stderr().contains("panicked"));
}

#[test]
fn check_config_reports_errors_with_paths() {
    let dir = weir_testkit::scratch_dir("cfg").unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        "[mysql_variables]\nthreads = \"many\"\nno_such_var = 1\n[[mysql_servers]]\naddress = \"h\"\nport = 70000\n\
         [[mysql_query_rules]]\nrule_id = 1\nactive = 1\nmatch_pattern = \"(unclosed\"\n",
    )
    .unwrap();
    let out = Command::new(common::weir_bin())
        .args(["check-config", "-c", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mysql_variables.threads"), "{err}");
    assert!(err.contains("mysql_variables.no_such_var"), "{err}");
    assert!(err.contains("mysql_servers[0].port"), "{err}");
    // A regular expression that does not compile is reported with the other errors.
    assert!(err.contains("rule 1: match_pattern"), "{err}");
    let good = dir.join("good.toml");
    std::fs::write(&good, weir_testkit::weir_config(common::topo(), 1, 0, "")).unwrap();
    let out = Command::new(common::weir_bin())
        .args(["check-config", "-c", good.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = Command::new(common::weir_bin())
        .arg("--version")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("weir "));
}

/// A first start with a rule whose regular expression does not compile fails before anything
/// is written to the datadir: once the file is fixed, weir starts.
#[test]
fn a_bad_rule_in_the_file_never_reaches_the_datadir() {
    let port = weir_testkit::free_port();
    let base = weir_testkit::weir_config(common::topo(), port, 0, "");
    let bad = format!(
        "{base}\n[[mysql_query_rules]]\nrule_id = 1\nactive = 1\nmatch_pattern = \"(unclosed\"\n"
    );
    let dir = weir_testkit::scratch_dir("badrule").unwrap();
    let cfg = dir.join("weir.toml");
    let data = dir.join("data");
    std::fs::write(&cfg, &bad).unwrap();
    let out = Command::new(common::weir_bin())
        .args(["-c", cfg.to_str().unwrap(), "-D", data.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nothing was written") && err.contains("match_pattern"),
        "{err}"
    );
    // Fixed, with the same datadir: it starts (the bad rule was not kept there).
    std::fs::write(&cfg, bad.replace("(unclosed", "^SELECT")).unwrap();
    let mut child = Command::new(common::weir_bin())
        .args(["-c", cfg.to_str().unwrap(), "-D", data.to_str().unwrap()])
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("weir exited ({status}) once the file was fixed");
        }
        assert!(t.elapsed() < Duration::from_secs(20), "weir did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// A file with errors stops the start that would read it (--initial), not a restart on a
/// datadir that already holds the configuration: that one runs on the database and logs the
/// file's errors as check-config prints them.
#[test]
fn a_file_with_errors_does_not_stop_a_restart() {
    let port = weir_testkit::free_port();
    let good = weir_testkit::weir_config(common::topo(), port, 0, "");
    let dir = weir_testkit::scratch_dir("badrestart").unwrap();
    let cfg = dir.join("weir.toml");
    let data = dir.join("data");
    let start = |args: &[&str]| {
        let mut all = vec!["-c", cfg.to_str().unwrap(), "-D", data.to_str().unwrap()];
        all.extend_from_slice(args);
        Command::new(common::weir_bin())
            .args(all)
            .env("NO_COLOR", "1")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let wait_up = |child: &mut std::process::Child| {
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(status) = child.try_wait().unwrap() {
                let mut err = String::new();
                std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
                panic!("weir exited ({status}):\n{err}");
            }
            assert!(t.elapsed() < Duration::from_secs(20), "weir did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    std::fs::write(&cfg, &good).unwrap();
    let mut first = start(&[]);
    wait_up(&mut first);
    first.kill().unwrap();
    first.wait().unwrap();

    std::fs::write(&cfg, format!("oops = 1\n{good}")).unwrap();
    let mut again = start(&[]);
    wait_up(&mut again);
    let out = mariadb_cmd(port).args(["-e", "SELECT 7"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains('7'),
        "{out:?}"
    );
    again.kill().unwrap();
    let out = again.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("the configuration file is not valid")
            && log.contains(&format!("{}: oops", cfg.display()))
            && log.contains("unknown key")
            && log.contains("1 error(s)"),
        "{log}"
    );

    let out = Command::new(common::weir_bin())
        .args([
            "-c",
            cfg.to_str().unwrap(),
            "-D",
            data.to_str().unwrap(),
            "--initial",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid configuration file")
            && err.contains("oops")
            && err.contains("unknown key"),
        "{err}"
    );
}

#[test]
fn large_result_streams_in_bounded_memory() {
    // 1 GiB: 1,048,576 rows of 1 KiB from MariaDB's sequence engine, read and discarded.
    let w = common::start_weir("");
    let t = Instant::now();
    let out = mariadb_cmd(w.port)
        .args([
            "--quick",
            "-N",
            "-D",
            "weirtest",
            "-e",
            "SELECT seq, REPEAT('x', 1017) FROM seq_1_to_1048576",
        ])
        .stdout(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let peak = w.peak_rss_kib().unwrap();
    eprintln!(
        "1 GiB through weir in {:?}, weir peak RSS {peak} KiB",
        t.elapsed()
    );
    assert!(peak < 64 * 1024, "peak RSS {peak} KiB");
}

#[test]
fn mysqlslap_through_weir() {
    let out = Command::new(require_binary("mysqlslap"))
        .args([
            "-h",
            "127.0.0.1",
            "-P",
            &common::weir().port.to_string(),
            "-u",
            WEIR_USER,
        ])
        .arg(format!("-p{WEIR_PASS}"))
        .args(["--protocol=TCP", "--ssl=0", "--create-schema=weirtest"])
        .args([
            "--query=SELECT 1111",
            "--concurrency=8",
            "--iterations=2",
            "--number-of-queries=4000",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("Average number of seconds"));
}

#[test]
fn handshake_charset_follows_the_client() {
    let query = "SELECT @@character_set_client, @@collation_connection";
    for (charset, expect) in [
        ("latin1", "latin1\tlatin1_swedish_ci"),
        ("utf8mb4", "utf8mb4\tutf8mb4_general_ci"),
    ] {
        // Several rounds so pooled connections of the other charset are around to be reused.
        for _ in 0..3 {
            let out = mariadb_cmd(common::weir().port)
                .args([
                    &format!("--default-character-set={charset}"),
                    "-N",
                    "-e",
                    query,
                ])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                String::from_utf8_lossy(&out.stdout).trim(),
                expect,
                "{charset}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_restart_does_not_fail_the_next_statement() {
    // Its own topology: restarting the shared primary would disturb the other tests.
    let topo = tokio::task::spawn_blocking(|| weir_testkit::Topology::start(0).unwrap())
        .await
        .unwrap();
    let port = weir_testkit::free_port();
    let cfg = weir_testkit::weir_config(&topo, port, 0, "");
    let w = weir_testkit::WeirProcess::spawn(&common::weir_bin(), &cfg).unwrap();
    let mut c = Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None))
        .await
        .unwrap();
    let before: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(before, Some(1));
    // The idle pooled connection dies with the server.
    let topo = tokio::task::spawn_blocking(move || {
        topo.primary.restart().unwrap();
        topo
    })
    .await
    .unwrap();
    let after: Option<i64> = c.query_first("SELECT 2").await.unwrap_or_else(|e| {
        panic!(
            "statement after the restart failed: {e}\n{}",
            w.stderr_tail(10)
        )
    });
    assert_eq!(after, Some(2));
    drop(topo);
}

/// CPU time (user + system) of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// mysql-busy_poll_us: statements run as usual while the workers poll, the polling stops once
/// clients are quiet (an idle weir burns no CPU), LOAD MYSQL VARIABLES switches it, and
/// shutdown does not wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn busy_polling_serves_statements_and_stops_when_idle() {
    let cfg = weir_testkit::weir_config(
        common::topo(),
        weir_testkit::free_port(),
        weir_testkit::free_port(),
        "busy_poll_us = 2000",
    );
    let mut w = weir_testkit::WeirProcess::spawn(&common::weir_bin(), &cfg).unwrap();
    let mut c = Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None))
        .await
        .unwrap();
    for i in 0..2000u32 {
        let v: Option<u32> = c.query_first(format!("SELECT {i}")).await.unwrap();
        assert_eq!(v, Some(i));
    }
    // Idle: the pollers stop within their 2 ms window.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = cpu_ticks(w.pid());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle = cpu_ticks(w.pid()) - before;
    assert!(idle < 50, "an idle weir used {idle} ticks of CPU in 2 s");
    let admin = |sql: &str| {
        std::process::Command::new(require_binary("mariadb"))
            .args([
                "-h",
                "127.0.0.1",
                "--protocol=TCP",
                "--ssl=0",
                "-uadmin",
                "-padmin",
            ])
            .arg(format!("-P{}", w.admin_port))
            .args(["-e", sql])
            .output()
            .unwrap()
    };
    // Switched off and on again at runtime.
    for value in ["0", "500"] {
        let o = admin(&format!(
            "SET mysql-busy_poll_us = {value}; LOAD MYSQL VARIABLES TO RUNTIME"
        ));
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: Option<u32> = c.query_first("SELECT 5").await.unwrap();
        assert_eq!(v, Some(5));
    }
    let o = admin("SET mysql-busy_poll_us = -1");
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("1231"));
    // Shutdown right after traffic: the pollers do not hold it up.
    let v: Option<u32> = c.query_first("SELECT 6").await.unwrap();
    assert_eq!(v, Some(6));
    drop(c);
    let t = Instant::now();
    let status = w.terminate(Duration::from_secs(8)).unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "shutdown took {:?}",
        t.elapsed()
    );
}

/// A weir whose primary (hostgroup 0) takes at most `max` connections from it.
fn start_with_max(max: u32, extra_vars: &str) -> weir_testkit::WeirProcess {
    let w = common::admin::start(extra_vars);
    common::admin::admin(
        &w,
        &format!(
            "UPDATE mysql_servers SET max_connections = {max} WHERE hostgroup_id = 0; \
             LOAD MYSQL SERVERS TO RUNTIME"
        ),
    );
    w
}

/// Statements on the primary whose text contains `tag`.
fn running_on_primary(tag: &str) -> usize {
    let rows = common::topo()
        .primary
        .query_rows(&format!(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%{tag}%' \
             AND INFO NOT LIKE '%PROCESSLIST%'"
        ))
        .unwrap();
    rows[0][0].parse().unwrap()
}

/// The server's error code of a failed statement.
fn server_code(r: &Result<Option<i64>, mysql_async::Error>) -> Option<u16> {
    match r {
        Err(mysql_async::Error::Server(e)) => Some(e.code),
        _ => None,
    }
}

/// Runs `sql` on `c` in a task: its result and when it ended.
fn run_in_task(
    mut c: Conn,
    sql: &'static str,
) -> tokio::task::JoinHandle<(Result<Option<i64>, mysql_async::Error>, Instant, Conn)> {
    tokio::spawn(async move {
        let r = c.query_first::<i64, _>(sql).await;
        (r, Instant::now(), c)
    })
}

/// KILL QUERY while every connection weir may open to the server is in use (its
/// max_connections reached): the KILL goes to the server over a connection of its own, outside
/// the pool, so it stops a running statement at once; a statement waiting for a connection is
/// ended at once with ERROR 1317, as the server ends one killed before it started. Neither
/// waits for another statement to free a connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_query_needs_no_free_backend_connection() {
    let w = start_with_max(2, "");
    let connect = || Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None));
    // Connected first: a driver's connect runs statements of its own.
    let victim = connect().await.unwrap();
    let other = connect().await.unwrap();
    let queued = connect().await.unwrap();
    let mut killer = connect().await.unwrap();
    let (victim_id, queued_id) = (victim.id(), queued.id());
    let victim = run_in_task(victim, "SELECT SLEEP(5) AS kq_victim");
    let other = run_in_task(other, "SELECT SLEEP(5) AS kq_other");
    wait_until("both sleeps on the server", Duration::from_secs(5), || {
        running_on_primary("kq_victim") + running_on_primary("kq_other") == 2
    });
    // Both connections in use: this one waits for one.
    let queued = run_in_task(queued, "SELECT SLEEP(5) AS kq_queued");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(running_on_primary("kq_queued"), 0, "it should wait");

    let killed_at = Instant::now();
    killer
        .query_drop(format!("KILL QUERY {queued_id}"))
        .await
        .unwrap();
    let (r, ended, mut queued) = queued.await.unwrap();
    assert_eq!(server_code(&r), Some(1317), "{r:?}");
    let took = ended.duration_since(killed_at);
    assert!(
        took < Duration::from_secs(1),
        "ended {took:?} after the KILL"
    );

    let killed_at = Instant::now();
    killer
        .query_drop(format!("KILL QUERY {victim_id}"))
        .await
        .unwrap();
    assert!(killed_at.elapsed() < Duration::from_secs(1));
    let (r, ended, mut victim) = victim.await.unwrap();
    assert_eq!(server_code(&r), Some(1317), "{r:?}");
    let took = ended.duration_since(killed_at);
    assert!(
        took < Duration::from_secs(1),
        "ended {took:?} after the KILL"
    );
    // The killed statement that waited never goes to the server, now that it could.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(running_on_primary("kq_queued"), 0);

    // The other statement ran on, untouched; the killed sessions are usable.
    let (r, _, _) = other.await.unwrap();
    assert_eq!(r.unwrap(), Some(0));
    let one: Option<i64> = queued.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
    let one: Option<i64> = victim.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
}

/// mysql-default_query_timeout while every connection weir may open to the server is in use:
/// the KILL QUERY that stops each statement needs no free connection, so both end at their
/// timeout rather than when the other ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_timeout_needs_no_free_backend_connection() {
    let w = start_with_max(2, "default_query_timeout = 1000");
    let connect = || Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None));
    let a = connect().await.unwrap();
    let b = connect().await.unwrap();
    let a = (
        Instant::now(),
        run_in_task(a, "SELECT SLEEP(5) AS kq_timeout_a"),
    );
    // Apart: MariaDB 10.11 can take seconds over KILL QUERYs of two sleeping threads sent at
    // the same instant (seen without weir too).
    tokio::time::sleep(Duration::from_millis(400)).await;
    let b = (
        Instant::now(),
        run_in_task(b, "SELECT SLEEP(5) AS kq_timeout_b"),
    );
    for (started, t) in [a, b] {
        let (r, ended, _) = t.await.unwrap();
        match &r {
            Err(mysql_async::Error::Server(e)) => {
                assert_eq!(e.code, 1907, "{e:?}");
                assert!(e.message.contains("mysql-default_query_timeout"), "{e:?}");
            }
            other => panic!("expected the timeout's error, got {other:?}"),
        }
        // At the timeout, not when the other statement ends (5 s); slack for a loaded host.
        let took = ended.duration_since(started);
        assert!(took < Duration::from_secs(4), "ended after {took:?}");
    }
    wait_until(
        "the statements stopped on the server",
        Duration::from_secs(2),
        || running_on_primary("kq_timeout_") == 0,
    );
}

/// KILL QUERY of a statement waiting for its turn on a pipelined connection (behind another
/// client's slow statement): its client gets ERROR 1317 at once, not the statement's result
/// after the one before it; the statement is stopped on the server when its turn comes; the
/// client before it gets its own result. (The statement waits in line as long as it takes:
/// with the default mysql-pipeline_max_wait_ms it would run on its own after 50 ms.)
#[test]
fn kill_query_of_a_pipelined_statement_waiting_for_its_turn() {
    let w = common::admin::start("pipeline_depth = 8\nthreads = 1\npipeline_max_wait_ms = 10000");
    let _warm = common::raw::warm_pool(w.port, 4);
    let mut killer = raw_login(&w, None);
    let (mut busy, mut head, mut follower, _) = pipelined_pair(
        &w,
        "SELECT SLEEP(2) AS kq_pipe_head",
        "SELECT SLEEP(2) AS kq_pipe_follower",
    );
    let killed_at = Instant::now();
    let ok = killer.query(&format!("KILL QUERY {}", follower.greeting.connection_id));
    assert_eq!(<[u8]>::first(&ok[0]), Some(&0), "KILL QUERY: {ok:?}");
    let reply = follower.read_reply(Expect::ResultSets);
    let took = killed_at.elapsed();
    assert_eq!(err_code(&reply[0]), Some(1317), "{reply:?}");
    assert!(
        took < Duration::from_secs(1),
        "answered {took:?} after the KILL"
    );
    // The statement before it ends as it would have, with its own result.
    let rows = head.read_reply(Expect::ResultSets);
    assert!(rows.iter().all(|p| err_code(p).is_none()), "{rows:?}");
    assert_eq!(rows[3], b"\x010", "{rows:?}");
    busy.read_reply(Expect::ResultSets);
    // The killed statement does not run its two seconds after the head's.
    wait_until(
        "the killed statement stopped on the server",
        Duration::from_millis(1500),
        || running_on_primary("kq_pipe_follower") == 0,
    );
    // Both sessions go on.
    for c in [&mut head, &mut follower] {
        let r = c.query("SELECT 1");
        assert_eq!(r[3], b"\x011", "{r:?}");
    }
}

/// A pipelined statement whose turn is long in coming (mysql-pipeline_max_wait_ms, 50 ms by
/// default) leaves the line and runs on a connection of its own; its copy on the pipe, which
/// starts when the statement ahead ends, is stopped on the server if it has not ended within
/// the same time: a slow statement runs once, and each client gets its own result.
#[test]
fn a_slow_statement_that_left_a_pipes_line_runs_once() {
    let w = common::admin::start("pipeline_depth = 8\nthreads = 1");
    let _warm = common::raw::warm_pool(w.port, 4);
    let (mut busy, mut head, mut follower, sent) = pipelined_pair(
        &w,
        "SELECT SLEEP(1) AS lw_pipe_head",
        "SELECT SLEEP(3) AS lw_pipe_follower",
    );
    let rows = head.read_reply(Expect::ResultSets);
    assert_eq!(rows[3], b"\x010", "{rows:?}");
    // The head's statement ended, and with it the follower's turn came: its copy started
    // then, and is stopped after the wait.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        running_on_primary("lw_pipe_follower"),
        1,
        "the statement should run only on the connection it moved to"
    );
    let rows = follower.read_reply(Expect::ResultSets);
    assert!(rows.iter().all(|p| err_code(p).is_none()), "{rows:?}");
    assert_eq!(rows[3], b"\x010", "{rows:?}");
    let took = sent.elapsed();
    assert!(
        took < Duration::from_millis(3900),
        "the follower's result came {took:?} after it was sent: it waited for the head's"
    );
    busy.read_reply(Expect::ResultSets);
    for c in [&mut head, &mut follower] {
        let r = c.query("SELECT 1");
        assert_eq!(r[3], b"\x011", "{r:?}");
    }
}

/// A client that stops reading a result is dropped once it has read nothing for its session's
/// net_write_timeout, as the server drops such a client: the backend connection the result
/// came from is given up, and a statement waiting for it (the server takes one connection
/// here) runs. Before, the session waited on its write for as long as the client stayed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_a_result_is_dropped_after_net_write_timeout() {
    let w = start_with_max(1, "connect_timeout_server_max = 30000");
    let mut stalled = raw_login(&w, Some("weirtest"));
    let ok = stalled.query("SET net_write_timeout = 2");
    assert_eq!(<[u8]>::first(&ok[0]), Some(&0), "{ok:?}");
    // About 400 MB: far more than the sockets between weir and the client hold.
    stalled.send(b"\x03SELECT seq, REPEAT('x', 200) FROM seq_1_to_2000000");
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let mut c = Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None))
        .await
        .unwrap();
    let n: Option<u32> = c.query_first("SELECT 7").await.unwrap();
    assert_eq!(n, Some(7));
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(15),
        "the statement waited {waited:?} for the stalled client's connection"
    );
    // The stalled client's connection was closed: what it reads now ends before the result.
    let mut packets = 0u64;
    while stalled.read_packet().is_ok() {
        packets += 1;
    }
    assert!(packets < 2_000_000, "{packets} packets: the whole result");
}

/// KILL ends at once a session whose client stopped reading its result: its backend
/// connection is free for the next statement (not after net_write_timeout, 60 s here).
#[tokio::test]
async fn kill_ends_a_session_whose_client_stopped_reading() {
    let w = start_with_max(1, "connect_timeout_server_max = 30000");
    let mut stalled = raw_login(&w, Some("weirtest"));
    stalled.send(b"\x03SELECT seq, REPEAT('x', 200) FROM seq_1_to_2000000");
    std::thread::sleep(Duration::from_millis(300));
    let id = common::admin::value(
        &w,
        "SELECT SessionID FROM stats_mysql_processlist WHERE info LIKE 'SELECT seq%'",
    );
    let mut killer = raw_login(&w, None);
    let started = Instant::now();
    let r = killer.query(&format!("KILL {id}"));
    assert_eq!(<[u8]>::first(&r[0]), Some(&0), "KILL: {r:?}");
    let r = killer.query("SELECT 7");
    assert_eq!(common::raw::text_first_row(&r), vec![Some("7".to_owned())]);
    let waited = started.elapsed();
    assert!(
        waited < Duration::from_secs(5),
        "the next statement waited {waited:?} for the killed session's connection"
    );
}

/// Once the killer has its OK, the killed session runs nothing more: its client's next
/// command (a COMMIT) does not commit, as on the server.
#[tokio::test]
async fn a_killed_session_commits_nothing_after_the_kill() {
    let w = start_with_max(4, "");
    common::on_primary(
        "CREATE OR REPLACE TABLE weirtest.kill_commit (id INT PRIMARY KEY, v INT); \
         INSERT INTO weirtest.kill_commit VALUES (1, 0)",
    );
    let mut killer = Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None))
        .await
        .unwrap();
    let mut committed = 0;
    for i in 1..=60 {
        let mut victim = common::connect_to(&w, WEIR_USER, WEIR_PASS, "weirtest").await;
        victim.query_drop("BEGIN").await.unwrap();
        victim
            .query_drop(format!("UPDATE kill_commit SET v = {i} WHERE id = 1"))
            .await
            .unwrap();
        killer
            .query_drop(format!("KILL {}", victim.id()))
            .await
            .unwrap();
        if victim.query_drop("COMMIT").await.is_ok() {
            committed += 1;
        }
    }
    let v = common::topo()
        .primary
        .query_value("SELECT v FROM weirtest.kill_commit WHERE id = 1")
        .unwrap();
    assert_eq!((committed, v.as_str()), (0, "0"));
}

/// A raw client logged in to `w`.
fn raw_login(w: &weir_testkit::WeirProcess, db: Option<&str>) -> RawClient {
    let (c, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, db);
    assert_eq!(<[u8]>::first(&p), Some(&0), "login: {p:?}");
    c
}

/// On a one-worker weir with pipelining (pipes are per worker thread): a client keeps a
/// statement on a backend (pipes only open while others run), then `head` and `follower` go
/// from two more, until the follower's statement waits for its turn behind the head's on a
/// pipe (10 attempts). Returns the three clients and when the head's statement was sent.
fn pipelined_pair(
    w: &weir_testkit::WeirProcess,
    head_sql: &str,
    follower_sql: &str,
) -> (RawClient, RawClient, RawClient, Instant) {
    let pipelined = || common::admin::pipelined_statements(w);
    let query = |sql: &str| [&[0x03u8][..], sql.as_bytes()].concat();
    for _attempt in 0..10 {
        let mut busy = raw_login(w, Some("weirtest"));
        busy.send(&query("SELECT SLEEP(1.5)"));
        std::thread::sleep(Duration::from_millis(50));
        let mut head = raw_login(w, Some("weirtest"));
        let mut follower = raw_login(w, Some("weirtest"));
        let before = pipelined();
        let sent = Instant::now();
        head.send(&query(head_sql));
        follower.send(&query(follower_sql));
        std::thread::sleep(Duration::from_millis(200));
        if pipelined() != before {
            return (busy, head, follower, sent);
        }
        // Not joined this time (each went its own way): again.
        for c in [&mut busy, &mut head, &mut follower] {
            c.read_reply(Expect::ResultSets);
        }
    }
    panic!("in 10 attempts, never a statement waiting for its turn on a pipe");
}

/// A client that hangs up while its statement waits for a backend connection (all in use)
/// ends its session at once, and its statement never runs: nobody would read the reply, and
/// a write its client gave up on must not happen later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_hangs_up_while_waiting_is_not_served() {
    let w = start_with_max(1, "connect_timeout_server_max = 20000");
    let primary = |sql: &str| common::topo().primary.query_rows(sql).unwrap();
    primary("CREATE TABLE IF NOT EXISTS weirtest.hangup (v VARCHAR(20))");
    primary("DELETE FROM weirtest.hangup");
    let mut a = Conn::new(common::opts_for(w.port, WEIR_USER, WEIR_PASS, None))
        .await
        .unwrap();
    a.query_drop("BEGIN").await.unwrap();
    a.query_drop("SELECT 1").await.unwrap();
    let sessions = || {
        let rows = common::admin::table(&w, "SELECT COUNT(*) AS n FROM stats_mysql_processlist");
        rows[0]["n"].parse::<usize>().unwrap()
    };
    let (mut d, ok) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(ok[0], 0, "{ok:?}");
    d.send(b"\x03INSERT INTO weirtest.hangup VALUES ('late')");
    std::thread::sleep(Duration::from_millis(300));
    let waiting = sessions();
    drop(d);
    wait_until(
        "the session of the client that hung up to end",
        Duration::from_secs(3),
        || sessions() == waiting - 1,
    );
    a.query_drop("ROLLBACK").await.unwrap();
    // Served in arrival order: a statement after the ROLLBACK has had its turn.
    let n: Option<i64> = a
        .query_first("SELECT COUNT(*) FROM weirtest.hangup")
        .await
        .unwrap();
    assert_eq!(n, Some(0), "the statement of a client that hung up ran");
}

/// A client that hangs up while weir is still opening the backend connection for its
/// statement (the server has not answered yet) leaves no slot taken on that server: its
/// max_connections stays whole for other clients.
#[test]
fn a_client_that_hangs_up_during_a_backend_connect_leaves_the_slot_free() {
    // A "server" that accepts connections and never greets.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let accepted = std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in silent.incoming().take(1) {
            held.push(s);
        }
        std::thread::sleep(Duration::from_secs(5));
    });
    let w = common::admin::start("monitor_enabled = false\nconnect_timeout_server = 4000");
    common::admin::admin(
        &w,
        &format!(
            "INSERT INTO mysql_servers (hostgroup_id, hostname, port, max_connections) \
             VALUES (7, '127.0.0.1', {silent_port}, 1); \
             INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) \
             VALUES (1, 1, '^SELECT 7', 7, 1); \
             LOAD MYSQL SERVERS TO RUNTIME; LOAD MYSQL QUERY RULES TO RUNTIME"
        ),
    );
    let used = || {
        common::admin::value(
            &w,
            "SELECT ConnUsed FROM stats_mysql_connection_pool WHERE hostgroup = 7",
        )
    };
    let (mut c, ok) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(ok[0], 0, "{ok:?}");
    c.send(b"\x03SELECT 7");
    wait_until("the connect to start", Duration::from_secs(3), || {
        used() == "1"
    });
    drop(c);
    wait_until(
        "the slot of the client that hung up to be free",
        Duration::from_secs(2),
        || used() == "0",
    );
    accepted.join().unwrap();
}

/// The first byte of each packet of a reply (and an ERR's code).
fn reply_shape(reply: &[Vec<u8>]) -> Vec<(u8, Option<u16>)> {
    reply.iter().map(|p| (p[0], err_code(p))).collect()
}

/// Another client's KILL QUERY of session `id`, 700 ms from now (a raw client: it needs no
/// backend connection to log in).
fn kill_query_later(port: u16, id: u32) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        let (mut k, ok) = RawClient::login(port, WEIR_USER, WEIR_PASS, None);
        assert_eq!(ok[0], 0, "{ok:?}");
        let r = k.query(&format!("KILL QUERY {id}"));
        assert_eq!(r[0][0], 0, "{r:?}");
    })
}

/// A client's own KILL QUERY of its `SELECT SLEEP(3)`, 700 ms in: the reply it gets.
fn killed_sleep_reply(port: u16) -> Vec<(u8, Option<u16>)> {
    let (mut a, ok) = RawClient::login(port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(ok[0], 0, "{ok:?}");
    let id = a.greeting.connection_id;
    let killer = kill_query_later(port, id);
    // Statements of other clients on backends (one per worker, as connections are spread
    // over them): A's statement then opens a pipe on its connection through weir.
    let busy: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let (mut b, ok) = RawClient::login(port, WEIR_USER, WEIR_PASS, None);
                assert_eq!(ok[0], 0, "{ok:?}");
                b.query("SELECT SLEEP(2)");
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(200));
    let reply = a.query("SELECT SLEEP(3)");
    killer.join().unwrap();
    for b in busy {
        b.join().unwrap();
    }
    reply_shape(&reply)
}

/// With mysql-pipeline_depth > 1 a reply ending in ERR 1317 is held back only when a KILL
/// meant for another statement may have caused it: the client's own KILL QUERY gets the
/// server's reply as sent (the column definitions, then the ERR), by which drivers tell an
/// interrupted statement from one that failed (Connector/J's setQueryTimeout).
#[test]
fn a_clients_own_kill_on_a_pipe_gets_the_servers_reply() {
    let w = common::admin::start("pipeline_depth = 4");
    let direct = killed_sleep_reply(common::topo().primary.port);
    assert_eq!(
        direct.last(),
        Some(&(0xff, Some(1317))),
        "the server itself: {direct:?}"
    );
    assert!(direct.len() > 1, "the server itself: {direct:?}");
    assert_eq!(killed_sleep_reply(w.port), direct, "{}", w.stderr_tail(20));
}

/// A KILL QUERY of a statement waiting for a backend connection: the killer gets its OK
/// before the victim gets its ERR 1317, as on the server (drivers such as Connector/J, which
/// time statements out with a KILL QUERY of their own, tell their timeout from another's KILL
/// by that order).
#[test]
fn the_killer_is_answered_before_the_killed_statement_ends() {
    let w = start_with_max(1, "connect_timeout_server_max = 20000");
    let (mut holder, ok) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(ok[0], 0, "{ok:?}");
    holder.query("BEGIN");
    holder.query("SELECT 1");
    let (mut killer, ok) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(ok[0], 0, "{ok:?}");
    let ready = |c: &RawClient| {
        let mut b = [0u8; 1];
        c.stream.set_nonblocking(true).unwrap();
        let r = c.stream.peek(&mut b);
        c.stream.set_nonblocking(false).unwrap();
        matches!(r, Ok(n) if n > 0)
    };
    for round in 0..20 {
        let (mut victim, ok) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
        assert_eq!(ok[0], 0, "{ok:?}");
        victim.send(b"\x03SELECT 2");
        std::thread::sleep(Duration::from_millis(50));
        killer.send(format!("\x03KILL QUERY {}", victim.greeting.connection_id).as_bytes());
        let t = Instant::now();
        while !ready(&victim) {
            assert!(
                t.elapsed() < Duration::from_secs(5),
                "round {round}: no reply"
            );
        }
        assert!(
            ready(&killer),
            "round {round}: the victim's ERR came before the KILL's OK"
        );
        let (_, p) = victim.read_packet().unwrap();
        assert_eq!(err_code(&p), Some(1317), "round {round}: {p:?}");
        let (_, p) = killer.read_packet().unwrap();
        assert_eq!(p[0], 0, "round {round}: {p:?}");
    }
    holder.query("ROLLBACK");
}

/// KILL QUERY of a statement waiting for its turn on a pipe, whose turn comes soon after (the
/// statement before it ends): the statement is stopped on the server and its client gets the
/// server's own reply to a killed statement (the column definitions, then ERROR 1317), as it
/// would directly; drivers tell their query timeouts by it.
#[test]
fn a_killed_follower_whose_turn_comes_soon_gets_the_servers_reply() {
    let direct = killed_sleep_reply(common::topo().primary.port);
    let w = common::admin::start("pipeline_depth = 8\nthreads = 1");
    let _warm = common::raw::warm_pool(w.port, 4);
    let mut killer = raw_login(&w, None);
    let (mut busy, mut head, mut follower, sent) = pipelined_pair(
        &w,
        "SELECT SLEEP(1) AS kq_soon_head",
        "SELECT SLEEP(3) AS kq_soon_follower",
    );
    // The head ends 100 ms after the KILL: within the grace.
    std::thread::sleep(Duration::from_millis(900).saturating_sub(sent.elapsed()));
    let ok = killer.query(&format!("KILL QUERY {}", follower.greeting.connection_id));
    assert_eq!(<[u8]>::first(&ok[0]), Some(&0), "KILL QUERY: {ok:?}");
    let reply = follower.read_reply(Expect::ResultSets);
    assert_eq!(reply_shape(&reply), direct, "{}", w.stderr_tail(20));
    head.read_reply(Expect::ResultSets);
    busy.read_reply(Expect::ResultSets);
    wait_until(
        "the killed statement stopped on the server",
        Duration::from_millis(1500),
        || running_on_primary("kq_soon_follower") == 0,
    );
    let r = follower.query("SELECT 1");
    assert_eq!(r[3], b"\x011", "{r:?}");
}

/// A server-prepared `SELECT SLEEP(3)` executed and killed 700 ms later by another client;
/// with `hold`, a third client holds the only backend connection (an open transaction) from
/// before the execution, so that it waits for one when the KILL comes. The reply it gets.
fn killed_execute_reply(port: u16, hold: bool) -> Vec<(u8, Option<u16>)> {
    let login = || {
        let (c, ok) = RawClient::login(port, WEIR_USER, WEIR_PASS, None);
        assert_eq!(ok[0], 0, "{ok:?}");
        c
    };
    let mut a = login();
    let r = a.command(b"\x16SELECT SLEEP(3) AS s", Expect::Prepare);
    assert_eq!(r[0][0], 0, "{r:?}");
    let stmt = r[0][1..5].to_vec();
    let mut holder = login();
    if hold {
        holder.query("BEGIN");
        holder.query("SELECT 1");
    }
    let id = a.greeting.connection_id;
    let killer = kill_query_later(port, id);
    let mut execute = vec![0x17];
    execute.extend_from_slice(&stmt);
    execute.push(0);
    execute.extend_from_slice(&1u32.to_le_bytes());
    let reply = a.command(&execute, Expect::ResultSets);
    killer.join().unwrap();
    if hold {
        holder.query("ROLLBACK");
    }
    reply_shape(&reply)
}

/// An execution of a prepared statement killed while it waits for a backend connection gets
/// what the server sends for one killed while it runs: the statement's column definitions,
/// then ERROR 1317 (Connector/J with server-side prepared statements reports its query
/// timeout only then).
#[test]
fn an_execution_killed_before_reaching_a_backend_gets_its_columns_first() {
    let w = start_with_max(1, "connect_timeout_server_max = 20000");
    let direct = killed_execute_reply(common::topo().primary.port, false);
    assert_eq!(direct.last(), Some(&(0xff, Some(1317))), "{direct:?}");
    assert!(direct.len() > 1, "the server itself: {direct:?}");
    let through_weir = killed_execute_reply(w.port, true);
    assert_eq!(through_weir, direct, "{}", w.stderr_tail(20));
}

/// The same with a driver that negotiates CLIENT_DEPRECATE_EOF (mysql_async): it reads the
/// column definitions and the ERR as the server's, and its connection goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_driver_reads_an_execution_killed_before_reaching_a_backend() {
    let w = start_with_max(1, "connect_timeout_server_max = 20000");
    let opts = || common::opts_for(w.port, WEIR_USER, WEIR_PASS, None);
    let mut a = Conn::new(opts()).await.unwrap();
    let stmt = a.prep("SELECT SLEEP(3) AS s").await.unwrap();
    let mut holder = Conn::new(opts()).await.unwrap();
    holder.query_drop("BEGIN").await.unwrap();
    holder.query_drop("SELECT 1").await.unwrap();
    let killer = kill_query_later(w.port, a.id());
    let r: Result<Vec<i64>, _> = a.exec(&stmt, ()).await;
    killer.join().unwrap();
    match r {
        Err(mysql_async::Error::Server(e)) => assert_eq!(e.code, 1317, "{e:?}"),
        other => panic!("{other:?}"),
    }
    holder.query_drop("ROLLBACK").await.unwrap();
    let one: Option<i64> = a.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1));
}

/// Idle clients: closed after mysql-wait_timeout, or their own session wait_timeout when it is
/// smaller, and after mysql-max_transaction_idle_time with a transaction open (rolled back);
/// a client that keeps talking stays.
#[test]
fn idle_clients_are_closed_after_their_timeouts() {
    let w = common::admin::start("wait_timeout = 800\nmax_transaction_idle_time = 1000");
    let login = || {
        let (c, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    let mut idle = login();
    let mut busy = login();
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(busy.query("SELECT 1")[0], [1]);
    }
    assert!(
        idle.closed_within(Duration::from_millis(100)),
        "idle for 1.5 s with wait_timeout 0.8 s"
    );
    assert!(!busy.closed_within(Duration::from_millis(100)));
    assert!(!busy.query("SELECT 1").is_empty());

    let w = common::admin::start("max_transaction_idle_time = 1000");
    let login = || {
        let (c, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    // Its own wait_timeout (seconds), smaller than weir's.
    let mut own = login();
    assert_eq!(own.query("SET SESSION wait_timeout = 1")[0][0], 0);
    let mut in_trx = login();
    let mut no_trx = login();
    common::topo()
        .primary
        .query_rows("CREATE TABLE IF NOT EXISTS weirtest.idle_trx (a INT)")
        .unwrap();
    assert_eq!(in_trx.query("BEGIN")[0][0], 0);
    assert_eq!(in_trx.query("INSERT INTO idle_trx VALUES (42)")[0][0], 0);
    std::thread::sleep(Duration::from_millis(1600));
    assert!(
        in_trx.closed_within(Duration::from_millis(100)),
        "idle in a transaction past 1 s"
    );
    assert!(
        own.closed_within(Duration::from_millis(100)),
        "idle past its own wait_timeout"
    );
    assert!(!no_trx.closed_within(Duration::from_millis(100)));
    let r = no_trx.query("SELECT COUNT(*) FROM idle_trx WHERE a = 42");
    assert_eq!(
        common::raw::text_first_row(&r),
        [Some("0".to_owned())],
        "rolled back; the client without a transaction is still served"
    );

    // A transaction never idle for long, but open past mysql-max_transaction_time.
    let w = common::admin::start("max_transaction_time = 1000");
    let (mut busy, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    assert_eq!(busy.query("BEGIN")[0][0], 0);
    let mut served = 0;
    for _ in 0..8 {
        std::thread::sleep(Duration::from_millis(250));
        if busy.closed_within(Duration::from_millis(1)) {
            break;
        }
        assert_eq!(busy.query("SELECT 1")[0], [1]);
        served += 1;
    }
    assert!(
        (3..8).contains(&served),
        "closed after about 1 s: {served} statements"
    );
    // Transactions that each end in time, chained one to the next (the server's session
    // stays in a transaction throughout): none is too long.
    let (mut chained, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    assert_eq!(chained.query("BEGIN")[0][0], 0);
    for (i, sql) in ["COMMIT AND CHAIN", "COMMIT; BEGIN", "ROLLBACK AND CHAIN"]
        .iter()
        .cycle()
        .take(6)
        .enumerate()
    {
        std::thread::sleep(Duration::from_millis(400));
        assert!(
            !chained.closed_within(Duration::from_millis(1)),
            "closed before {sql} (#{i})"
        );
        let r = chained.query(sql);
        assert_ne!(r[0][0], 0xff, "{sql}: {r:?}");
    }
}

/// mysql-use_tcp_keepalive: keepalive probes on client sockets, after mysql-tcp_keepalive_time
/// of silence; none by default. `ss` shows a socket's keepalive timer.
#[test]
fn tcp_keepalive_on_client_connections() {
    // weir's side of the client's connection once its login's last bytes were acknowledged
    // (a retransmission timer shows until then).
    let timers = |w: &weir_testkit::WeirProcess| {
        let (c, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
        assert_eq!(p[0], 0);
        let mut seen = String::new();
        for _ in 0..20 {
            std::thread::sleep(Duration::from_millis(100));
            let out = std::process::Command::new("ss")
                .args([
                    "-tnoH",
                    "state",
                    "established",
                    "sport",
                    "=",
                    &format!(":{}", w.port),
                ])
                .output()
                .expect("ss (iproute2) runs");
            seen = String::from_utf8_lossy(&out.stdout).into_owned();
            if !seen.contains("timer:(on") {
                break;
            }
        }
        drop(c);
        seen
    };
    let w = common::admin::start("use_tcp_keepalive = true\ntcp_keepalive_time = 77");
    let seen = timers(&w);
    assert!(seen.contains("timer:(keepalive,1min1"), "{seen}");
    let w = common::admin::start("");
    let seen = timers(&w);
    assert!(!seen.is_empty() && !seen.contains("keepalive"), "{seen}");
}

/// A client that hangs up during a long statement: weir kills it on the server
/// (mysql-kill_backend_connection_when_disconnect, by default), or leaves it to run when
/// that is false.
#[test]
fn a_hung_up_clients_statement_is_killed_unless_configured_not_to() {
    let primary = &common::topo().primary;
    let still_running = |extra: &str, tag: &str| {
        let w = common::admin::start(extra);
        let (mut c, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        c.send(format!("\x03SELECT SLEEP(4) AS {tag}").as_bytes());
        let running = || {
            primary
                .query_value(&format!(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                     WHERE INFO LIKE 'SELECT SLEEP(4) AS {tag}%'"
                ))
                .unwrap()
                == "1"
        };
        wait_until(
            "the statement on the server",
            Duration::from_secs(10),
            running,
        );
        drop(c);
        std::thread::sleep(Duration::from_millis(1200));
        running()
    };
    assert!(!still_running("", "hung_up_killed"));
    assert!(still_running(
        "kill_backend_connection_when_disconnect = false",
        "hung_up_left"
    ));
}

/// mysql-wait_timeout applies to fast_forward users too: an idle one is closed, one that keeps
/// talking stays.
#[test]
fn idle_fast_forward_clients_are_closed_after_wait_timeout() {
    const USER: &str = "weir_ff_idle";
    const PASS: &str = "ffidlepass";
    common::topo()
        .primary
        .exec(&format!(
            "CREATE USER IF NOT EXISTS '{USER}'@'%' IDENTIFIED BY '{PASS}'; \
             GRANT SELECT ON weirtest.* TO '{USER}'@'%';"
        ))
        .unwrap();
    let w = common::admin::start("wait_timeout = 800");
    common::admin::admin(
        &w,
        &format!(
            "INSERT INTO mysql_users (username, password, default_hostgroup, fast_forward) \
             VALUES ('{USER}', '{PASS}', 0, 1); LOAD MYSQL USERS TO RUNTIME;"
        ),
    );
    let login = || {
        let (c, p) = RawClient::login(w.port, USER, PASS, None);
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    let mut idle = login();
    let mut busy = login();
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(busy.query("SELECT 1")[3], [1, b'1']);
    }
    assert!(idle.closed_within(Duration::from_millis(100)));
    assert!(!busy.closed_within(Duration::from_millis(100)));
    // A statement that runs longer than the limit is not idleness: its client waits for it.
    let r = busy.query("SELECT SLEEP(1.5)");
    assert_eq!(r[3], [1, b'0'], "{r:?}");
    // A client whose last command gets no reply (COM_STMT_CLOSE) is idle after it.
    let mut closing = login();
    let prepared = closing.command(b"\x16SELECT 1", weir_wire::reply::Expect::Prepare);
    assert_eq!(prepared[0][0], 0, "{prepared:?}");
    closing.send(&[&[0x19][..], &prepared[0][1..5]].concat());
    assert!(closing.closed_within(Duration::from_millis(3000)));
}
