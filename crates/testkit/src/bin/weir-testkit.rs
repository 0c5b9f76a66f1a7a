//! `weir-testkit topology --replicas 2 [--dir DIR] [--clean]`: starts a MariaDB primary and
//! replicas for the README quickstart and the benchmark scripts, writes `DIR/topology.env`, and
//! stays in the foreground until SIGINT/SIGTERM.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use weir_testkit::{TestkitError, Topology};

#[derive(Parser)]
#[command(
    name = "weir-testkit",
    about = "Real MariaDB servers for weir's tests, demos and benchmarks"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Start a primary and replicas with GTID replication; stop them on SIGINT/SIGTERM.
    Topology {
        /// Number of replicas.
        #[arg(long, default_value_t = 2)]
        replicas: usize,
        /// Directory for datadirs, logs and topology.env (must be empty; kept on exit unless --clean).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Remove --dir on exit.
        #[arg(long)]
        clean: bool,
    },
    /// Stand-in for the weir binary in the testkit's own tests: listens on the ports of the
    /// config given with -c until SIGTERM.
    #[command(hide = true)]
    FakeWeir {
        /// weir config file.
        #[arg(short = 'c')]
        config: PathBuf,
        /// weir datadir (must exist).
        #[arg(short = 'D')]
        datadir: PathBuf,
    },
}

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Cmd::Topology {
            replicas,
            dir,
            clean,
        } => run_topology(replicas, dir.as_deref(), clean),
        Cmd::FakeWeir { config, datadir } => fake_weir(&config, &datadir),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("weir-testkit: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_topology(replicas: usize, dir: Option<&Path>, clean: bool) -> Result<(), TestkitError> {
    // Register the handlers before starting, so a signal during startup still cleans up.
    let mut signals = Signals::new([SIGINT, SIGTERM])
        .map_err(|e| TestkitError::io("install SIGINT/SIGTERM handlers", e))?;
    let mut topology = match dir {
        Some(dir) => Topology::start_in(dir, replicas)?,
        None => Topology::start(replicas)?,
    };
    if clean {
        topology.set_keep_dir(false);
    }
    for server in topology.all() {
        println!(
            "{} 127.0.0.1:{} socket={} datadir={} log={}",
            server.name,
            server.port,
            server.socket.display(),
            server.datadir.display(),
            server.log_path.display()
        );
    }
    // Written last and atomically: scripts may poll for this file to know the servers are ready.
    let env_path = topology.base_dir.join("topology.env");
    let tmp = topology.base_dir.join(".topology.env.tmp");
    std::fs::write(&tmp, topology.env_file())
        .and_then(|()| std::fs::rename(&tmp, &env_path))
        .map_err(|e| TestkitError::io(format!("write {}", env_path.display()), e))?;
    println!("env {}", env_path.display());
    println!(
        "ready: press Ctrl-C or send SIGTERM to pid {} to stop",
        std::process::id()
    );

    let signal = signals.forever().next();
    eprintln!("weir-testkit: signal {signal:?}, stopping servers");
    if topology.shutdown().is_ok() && dir.is_some() && !clean {
        // The servers are gone: a stale env file would mislead scripts.
        let _ = std::fs::remove_file(&env_path);
        eprintln!("weir-testkit: kept {}", topology.base_dir.display());
    }
    Ok(())
}

fn fake_weir(config: &Path, datadir: &Path) -> Result<(), TestkitError> {
    let mut signals =
        Signals::new([SIGTERM]).map_err(|e| TestkitError::io("install SIGTERM handler", e))?;
    if !datadir.is_dir() {
        return Err(TestkitError::Invalid(format!(
            "datadir {} missing",
            datadir.display()
        )));
    }
    let text = std::fs::read_to_string(config)
        .map_err(|e| TestkitError::io(format!("read {}", config.display()), e))?;
    let (port, admin_port) = weir_testkit::config_ports(&text)?;
    for port in [port, admin_port].into_iter().filter(|p| *p != 0) {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))
            .map_err(|e| TestkitError::io(format!("bind 127.0.0.1:{port}"), e))?;
        std::thread::spawn(move || for _ in listener.incoming() {});
    }
    eprintln!("fake weir listening on {port} and {admin_port}");
    signals.forever().next();
    eprintln!("fake weir: SIGTERM, exiting");
    Ok(())
}
