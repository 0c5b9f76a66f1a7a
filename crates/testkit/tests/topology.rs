//! The test kit against real mariadbd: replication, accounts, failure operations, teardown, and
//! the weir process harness (with the kit's own fake weir).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use weir_testkit::{
    free_port, weir_config, Topology, WeirProcess, ED_PASS, ED_USER, MONITOR_PASS, MONITOR_USER,
    WEIR_PASS, WEIR_USER,
};

const CATCH_UP: Duration = Duration::from_secs(20);

fn testkit_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_weir-testkit"))
}

/// Polls `cond` every 20 ms for up to `timeout`.
fn eventually(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

fn pid_alive(pid: u32) -> bool {
    // A zombie still has /proc/PID but is gone for our purposes.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

#[test]
fn row_inserted_on_primary_reaches_every_replica() {
    let topo = Topology::shared();
    assert_eq!(topo.replicas.len(), 2);
    topo.primary
        .exec(
            "CREATE TABLE weirtest.tk_repl (id INT PRIMARY KEY, v VARCHAR(20));
             INSERT INTO weirtest.tk_repl VALUES (1, 'hello'), (2, NULL);",
        )
        .expect("insert on primary");
    topo.wait_replicas_caught_up(CATCH_UP).expect("caught up");
    for replica in &topo.replicas {
        let rows = replica
            .query_rows("SELECT id, v FROM weirtest.tk_repl ORDER BY id")
            .expect("select on replica");
        assert_eq!(rows, [["1", "hello"], ["2", "NULL"]], "on {}", replica.name);
        assert_eq!(
            replica
                .query_value("SELECT @@read_only")
                .expect("read_only"),
            "1"
        );
    }
    assert_eq!(
        topo.primary
            .query_value("SELECT @@read_only")
            .expect("read_only"),
        "0"
    );
}

#[test]
fn every_server_has_the_accounts_and_databases() {
    let topo = Topology::shared();
    for server in topo.all() {
        for (user, pass) in [
            (WEIR_USER, WEIR_PASS),
            (MONITOR_USER, MONITOR_PASS),
            (ED_USER, ED_PASS),
        ] {
            let who = server
                .exec_as(user, pass, "SELECT CURRENT_USER()")
                .unwrap_or_else(|e| panic!("{user} cannot log in to {}: {e}", server.name));
            assert_eq!(who.trim(), format!("{user}@%"));
        }
        let plugin = server
            .query_value("SELECT plugin FROM mysql.user WHERE user = 'weir_ed'")
            .expect("plugin");
        assert_eq!(plugin, "ed25519", "on {}", server.name);
        let anonymous = server
            .query_value("SELECT COUNT(*) FROM mysql.user WHERE user = ''")
            .expect("anonymous");
        assert_eq!(anonymous, "0", "on {}", server.name);
        let dbs = server
            .query_rows("SHOW DATABASES LIKE '%test'")
            .expect("databases");
        assert_eq!(dbs, [["sbtest"], ["weirtest"]], "on {}", server.name);
        assert!(server
            .exec_as(WEIR_USER, "wrong", "SELECT 1")
            .is_err_and(|e| e.to_string().contains("Access denied")));
    }
    for replica in &topo.replicas {
        let status = replica
            .exec_as(MONITOR_USER, MONITOR_PASS, "SHOW SLAVE STATUS")
            .expect("monitor runs SHOW SLAVE STATUS");
        assert!(status.contains("Yes\tYes"), "{status}");
    }
    let url = topo.primary.url(WEIR_USER, WEIR_PASS);
    assert_eq!(
        url,
        format!("mysql://weir:weirpass@127.0.0.1:{}/", topo.primary.port)
    );
}

#[test]
fn sql_errors_carry_stderr() {
    let err = Topology::shared()
        .primary
        .exec("SELECT * FROM weirtest.no_such_table")
        .expect_err("must fail");
    assert!(err.to_string().contains("doesn't exist"), "{err}");
}

#[test]
fn killed_and_restarted_replica_resumes_replication() {
    let topo = Topology::start(1).expect("topology");
    let replica = &topo.replicas[0];
    topo.primary
        .exec("CREATE TABLE weirtest.t (id INT PRIMARY KEY); INSERT INTO weirtest.t VALUES (1);")
        .expect("create");
    topo.wait_replicas_caught_up(CATCH_UP).expect("caught up");

    let old_pid = replica.pid();
    replica.kill().expect("kill");
    assert!(!replica.is_running());
    assert!(replica.exec("SELECT 1").is_err());
    topo.primary
        .exec("INSERT INTO weirtest.t VALUES (2), (3);")
        .expect("insert while replica is down");
    replica.restart().expect("restart replica");
    assert_ne!(replica.pid(), old_pid);
    topo.wait_replicas_caught_up(CATCH_UP)
        .expect("caught up after restart");
    assert_eq!(
        replica
            .query_value("SELECT COUNT(*) FROM weirtest.t")
            .expect("count"),
        "3"
    );

    // A graceful stop and restart of the primary: the replica reconnects by itself.
    topo.primary.stop().expect("stop primary");
    topo.primary.restart().expect("restart primary");
    topo.primary
        .exec("INSERT INTO weirtest.t VALUES (4);")
        .expect("insert");
    topo.wait_replicas_caught_up(CATCH_UP)
        .expect("caught up after primary restart");
    assert_eq!(
        replica
            .query_value("SELECT COUNT(*) FROM weirtest.t")
            .expect("count"),
        "4"
    );

    let pids: Vec<u32> = topo.all().map(|s| s.pid()).collect();
    let dir = topo.base_dir.clone();
    drop(topo);
    assert!(!dir.exists(), "{} left behind", dir.display());
    assert!(
        pids.iter().all(|pid| !pid_alive(*pid)),
        "servers left running: {pids:?}"
    );
}

#[test]
fn servers_die_with_a_killed_owner() {
    let dir = weir_testkit::scratch_dir("owner")
        .expect("dir")
        .join("topo");
    let mut owner = Command::new(testkit_bin())
        .args(["topology", "--replicas", "0", "--dir"])
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn weir-testkit topology");
    let env = dir.join("topology.env");
    assert!(
        eventually(Duration::from_secs(60), || env.exists()),
        "topology did not start"
    );
    let pid: u32 = std::fs::read_to_string(dir.join("primary/mysqld.pid"))
        .expect("pid file")
        .trim()
        .parse()
        .expect("pid");
    assert!(pid_alive(pid));
    let text = std::fs::read_to_string(&env).expect("env");
    assert!(
        text.contains("PRIMARY_PORT=") && text.contains("PRIMARY_SOCKET='"),
        "{text}"
    );

    owner.kill().expect("SIGKILL the owner");
    owner.wait().expect("reap");
    assert!(
        eventually(Duration::from_secs(10), || !pid_alive(pid)),
        "mariadbd {pid} survived its owner"
    );
}

fn fake_weir_script() -> PathBuf {
    let dir = weir_testkit::scratch_dir("fake").expect("dir");
    let script = dir.join("weir");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nexec '{}' fake-weir \"$@\"\n",
            testkit_bin().display()
        ),
    )
    .expect("write script");
    let status = Command::new("chmod")
        .arg("+x")
        .arg(&script)
        .status()
        .expect("chmod");
    assert!(status.success());
    script
}

#[test]
fn weir_process_harness() {
    let topo = Topology::shared();
    let (port, admin_port) = (free_port(), free_port());
    let config = weir_config(
        topo,
        port,
        admin_port,
        "threads = 4\nmonitor_enabled = true",
    );
    let table: toml::Table = config.parse().expect("valid TOML");
    assert_eq!(table["mysql_variables"]["threads"].as_integer(), Some(4));
    assert_eq!(
        table["mysql_variables"]["monitor_enabled"].as_bool(),
        Some(true)
    );
    let servers = table["mysql_servers"].as_array().expect("servers");
    let hostgroups: Vec<_> = servers
        .iter()
        .map(|s| s["hostgroup"].as_integer())
        .collect();
    assert_eq!(hostgroups, [Some(0), Some(1), Some(1)]);
    assert_eq!(
        servers[0]["port"].as_integer(),
        Some(i64::from(topo.primary.port))
    );
    assert_eq!(table["mysql_users"].as_array().map(Vec::len), Some(2));

    let bin = fake_weir_script();
    let mut weir = WeirProcess::spawn(&bin, &config).expect("spawn");
    assert_eq!((weir.port, weir.admin_port), (port, admin_port));
    assert!(weir.config_path.exists() && weir.datadir.is_dir());
    assert!(weir.rss_kib().expect("rss") > 0);
    assert!(weir.peak_rss_kib().expect("hwm") >= weir.rss_kib().expect("rss"));
    weir.restart().expect("restart");
    let status = weir.terminate(Duration::from_secs(10)).expect("terminate");
    assert!(status.success(), "{status}");
    assert!(
        weir.stderr().contains("SIGTERM, exiting"),
        "{}",
        weir.stderr()
    );
}

#[test]
fn weir_that_fails_to_start_reports_its_stderr() {
    let config = format!(
        "[mysql_variables]\ninterfaces = \"127.0.0.1:{}\"\n",
        free_port()
    );
    // `sh -c CONFIG` tries to execute the config file: a quick, loud failure.
    let err = WeirProcess::spawn(Path::new("/bin/sh"), &config).expect_err("must fail");
    let text = err.to_string();
    assert!(
        text.contains("exited during startup") && text.contains("Permission denied"),
        "{text}"
    );
}
