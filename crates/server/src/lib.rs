//! Wires the crates into the running proxy: configuration → runtime snapshot, pool,
//! listeners, accept loops, signals and the shutdown phases.
#![forbid(unsafe_code)]

mod control;
mod listen;

pub use control::compile_rules;

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use weir_config::Runtime;
use weir_pool::{Pool, PoolSettings, ServerSpec};
use weir_session::Shared;

/// How the process was started.
#[derive(Debug, Clone)]
pub struct Options {
    /// Configuration file.
    pub config: PathBuf,
    /// Data directory from the command line.
    pub datadir: Option<PathBuf>,
    /// `--initial`.
    pub initial: bool,
}

/// Why weir could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The configuration file is invalid where it would be read.
    #[error("invalid configuration file:\n{}", config_report(.path, .errors))]
    Config {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        errors: weir_config::ConfigErrors,
    },
    /// No data directory was given.
    #[error("no data directory: pass -D DATADIR or set `datadir` in the configuration file")]
    NoDatadir,
    /// The admin database could not be opened or holds an unusable configuration.
    #[error("{0}")]
    Store(String),
    /// An I/O failure at startup (datadir, listeners, runtime).
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The failure.
        source: std::io::Error,
    },
}

/// Pool settings from the mysql variables.
pub fn pool_settings(rt: &Runtime) -> PoolSettings {
    let m = &rt.mysql;
    PoolSettings {
        connect_timeout: m.connect_timeout_server,
        connect_timeout_max: m.connect_timeout_server_max,
        connect_retries: m.connect_retries_on_failure,
        free_connections_pct: m.free_connections_pct,
        ping_interval: m.ping_interval_server,
        shun_on_failures: m.shun_on_failures,
        shun_recovery_time: m.shun_recovery_time,
        max_age: m.connection_max_age,
        ping_timeout: m.ping_timeout_server,
        init_connect: m.init_connect.as_deref().map(Arc::from),
        connect_retries_delay: m.connect_retries_delay,
        autocommit_false_not_reusable: m.autocommit_false_not_reusable,
        // weir spells out the charsets of the collations it knows (`SET NAMES`).
        collation_portable: |id| weir_sql::collation_by_id(u32::from(id)).is_some(),
        lag_checked: m.monitor_enabled,
    }
}

/// Server specs for the pool: the configured servers, moved between replication hostgroups
/// by the read_only the monitor saw.
pub fn server_specs(rt: &Runtime, read_only: &weir_monitor::ReadOnlyMap) -> Vec<ServerSpec> {
    weir_monitor::server_specs(rt, &read_only.snapshot())
}

/// The errors of a configuration file as `weir check-config` prints them: one per line,
/// after the file's name, then their count.
pub fn config_report(path: &Path, errors: &weir_config::ConfigErrors) -> String {
    let mut out = String::new();
    for e in &errors.0 {
        out.push_str(&format!("{}: {e}\n", path.display()));
    }
    out.push_str(&format!("{}: {} error(s)", path.display(), errors.0.len()));
    out
}

/// Runs weir in the foreground until SIGINT or SIGTERM.
///
/// Threading: `mysql-threads` workers, each a single-threaded event loop that accepts on every
/// listener and runs its sessions to completion, so a statement's client and backend sockets
/// are driven by one thread with no cross-thread wakeups on the hot path.
pub fn run(opts: Options) -> Result<(), StartError> {
    let config_error = |errors| StartError::Config {
        path: opts.config.clone(),
        errors,
    };
    let (file, file_errors) = match weir_config::load_config_file(&opts.config) {
        Ok(file) => (file, None),
        // A restart reads the database, not the file: a file with errors stops weir only
        // where it would be read (a first start, --initial) and is reported otherwise, so
        // that a typo in it does not keep the proxy down.
        Err(errors) if !opts.initial => (
            weir_config::ConfigFile {
                datadir: weir_config::datadir_as_parsed(&opts.config),
                tables: Default::default(),
            },
            Some(errors),
        ),
        Err(errors) => return Err(config_error(errors)),
    };
    let datadir = match opts.datadir.clone().or(file.datadir.clone()) {
        Some(d) => d,
        None => return Err(file_errors.map_or(StartError::NoDatadir, config_error)),
    };
    std::fs::create_dir_all(&datadir).map_err(|e| StartError::Io {
        context: format!("cannot create data directory {}", datadir.display()),
        source: e,
    })?;
    let rules_compile = |t: &weir_config::ConfigTables| -> Result<(), String> {
        if let Some(errors) = &file_errors {
            return Err(config_report(&opts.config, errors));
        }
        weir_rules::CompiledRules::compile(&t.mysql_query_rules)
            .map(|_| ())
            .map_err(|errors| {
                let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
                format!("its query rules do not compile: {}", lines.join("; "))
            })
    };
    let (store, tables) =
        weir_admin::bootstrap(&datadir, &file.tables, opts.initial, &rules_compile)
            .map_err(|e| StartError::Store(e.message))?;
    if let Some(errors) = &file_errors {
        tracing::error!(
            "the configuration file is not valid; weir runs on the configuration in {} (the \
             file is read only on a first start, with --initial or by LOAD ... FROM CONFIG):\n{}",
            datadir.join("weir.db").display(),
            config_report(&opts.config, errors)
        );
    }
    let runtime = Arc::new(Runtime::build(&tables).map_err(|e| {
        StartError::Store(format!(
            "the configuration in {} is invalid (fix it with the admin interface after starting with --initial, or correct the file):\n{e}",
            datadir.join("weir.db").display()
        ))
    })?);
    for w in &runtime.warnings {
        tracing::warn!("{w}");
    }
    let threads = runtime.mysql.threads.max(1);
    weir_pool::worker::set_count(threads);
    let pool = Arc::new(Pool::new(pool_settings(&runtime)));
    let read_only = Arc::new(weir_monitor::ReadOnlyMap::default());
    pool.apply_servers(&server_specs(&runtime, &read_only));
    let shared = Shared::new(runtime.clone(), pool.clone());
    let rules = control::compile_rules(&runtime).map_err(|problems| {
        StartError::Store(format!(
            "the query rules in {} do not compile:\n{}",
            datadir.join("weir.db").display(),
            problems.join("\n")
        ))
    })?;
    shared.set_rules(rules);
    let paused = Arc::new(AtomicBool::new(false));
    let shutdown_requested = CancellationToken::new();
    let (admin_ifaces, iface_changes) = tokio::sync::mpsc::unbounded_channel();
    let control = Arc::new(control::ProxyControl {
        shared: shared.clone(),
        pool: pool.clone(),
        paused: paused.clone(),
        shutdown: shutdown_requested.clone(),
        read_only: read_only.clone(),
        admin_ifaces,
    });
    let admin = Arc::new(weir_admin::Admin::new(store, control, opts.config.clone()));
    // The handlers are in place before any port accepts: a SIGTERM that arrives as soon as
    // weir looks ready (a supervisor, a test) must shut down gracefully, not kill the process.
    let signals = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StartError::Io {
            context: "cannot start the signal handler".into(),
            source: e,
        })?;
    let (term, int) = {
        use tokio::signal::unix::{signal, SignalKind};
        let _context = signals.enter();
        (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        )
    };
    if runtime.mysql.server_version.is_empty() {
        // Clients are greeted with the backends' own version: learn it before the first one
        // arrives rather than from the first backend connection.
        signals.block_on(learn_backend_version(&pool));
    }
    let admin_listeners: Vec<_> = runtime
        .admin
        .mysql_ifaces
        .iter()
        .cloned()
        .zip(listen::bind_all(&runtime.admin.mysql_ifaces)?)
        .collect();
    let listeners = listen::bind_all(&runtime.mysql.interfaces)?;
    let tracker = TaskTracker::new();
    let stop = CancellationToken::new();
    let mut workers = Vec::with_capacity(threads);
    for i in 0..threads {
        let mine = listeners
            .iter()
            .map(listen::Listener::try_clone)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| StartError::Io {
                context: "cannot share a listener with a worker".into(),
                source: e,
            })?;
        let (shared, tracker, stop) = (shared.clone(), tracker.clone(), stop.clone());
        let paused = paused.clone();
        let handle = std::thread::Builder::new()
            .name(format!("weir-worker-{i}"))
            .spawn(move || worker(i, mine, shared, tracker, stop, paused))
            .map_err(|e| StartError::Io {
                context: "cannot start a worker thread".into(),
                source: e,
            })?;
        workers.push(handle);
    }
    let admin_thread = {
        let stop = stop.clone();
        let chores = (shared.cache.clone(), pool.clone());
        std::thread::Builder::new()
            .name("weir-admin".into())
            .spawn(move || admin_thread(admin_listeners, iface_changes, admin, chores, stop))
            .map_err(|e| StartError::Io {
                context: "cannot start the admin thread".into(),
                source: e,
            })?
    };
    let monitor_thread = {
        let source: weir_monitor::RuntimeSource = {
            let shared = shared.clone();
            Arc::new(move || shared.runtime.load_full())
        };
        let monitor = Arc::new(weir_monitor::Monitor::new(
            pool.clone(),
            source,
            shared.monitor_log.clone(),
            read_only.clone(),
        ));
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("weir-monitor".into())
            .spawn(move || {
                match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt.block_on(monitor.run(stop)),
                    Err(e) => tracing::error!(error = %e, "cannot start the monitor"),
                }
            })
            .map_err(|e| StartError::Io {
                context: "cannot start the monitor thread".into(),
                source: e,
            })?
    };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        threads,
        datadir = %datadir.display(),
        servers = runtime.servers.len(),
        users = runtime.frontend_users.len(),
        "weir started"
    );
    signals.block_on(async {
        tokio::select! {
            _ = wait_for_signal(term, int) => {}
            _ = shutdown_requested.cancelled() => {
                tracing::info!("shutdown requested through the admin interface");
            }
        }
    });
    tracing::info!("shutting down: no new connections; in-flight statements may finish");
    stop.cancel();
    shared.shutdown.cancel();
    tracker.close();
    for w in workers {
        if w.join().is_err() {
            tracing::error!("a worker thread panicked");
        }
    }
    if admin_thread.join().is_err() {
        tracing::error!("the admin thread panicked");
    }
    if monitor_thread.join().is_err() {
        tracing::error!("the monitor thread panicked");
    }
    // Retiring every server closes the idle backend connections.
    pool.apply_servers(&[]);
    for l in &listeners {
        l.remove_socket_file();
    }
    tracing::info!("weir stopped");
    Ok(())
}

/// Reads the greeting of the first servers until one answers (a few, briefly: a start with
/// every backend down must not wait long); the version then stays unknown until a backend
/// connection succeeds.
async fn learn_backend_version(pool: &Pool) {
    let timeout = std::time::Duration::from_millis(500);
    let servers = pool.servers();
    let online = servers.iter().filter(|s| !s.draining());
    let others = servers.iter().filter(|s| s.draining());
    for s in online.chain(others).take(3) {
        match weir_backend::BackendConn::probe_version(s.endpoint(), timeout).await {
            Ok(v) => {
                tracing::info!(server = %s.endpoint(), version = %v, "backend version learned");
                return;
            }
            Err(e) => {
                tracing::debug!(server = %s.endpoint(), error = %e, "no greeting from the server")
            }
        }
    }
}

fn worker(
    index: usize,
    listeners: Vec<listen::Listener>,
    shared: Arc<Shared>,
    tracker: TaskTracker,
    stop: CancellationToken,
    paused: Arc<AtomicBool>,
) {
    weir_pool::worker::enter(index);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(worker = index, error = %e, "cannot start a worker event loop");
            return;
        }
    };
    rt.block_on(async {
        for l in listeners {
            match l.into_tokio() {
                Ok(l) => {
                    let (shared, tracker2, stop) = (shared.clone(), tracker.clone(), stop.clone());
                    tracker.spawn(listen::accept_loop(
                        l,
                        shared,
                        tracker2,
                        stop,
                        paused.clone(),
                    ));
                }
                Err(e) => tracing::error!(worker = index, error = %e, "cannot register a listener"),
            }
        }
        let (poll_shared, poll_stop) = (shared.clone(), stop.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = poll_stop.cancelled() => {}
                _ = weir_session::busy_poll::poll_while_busy(poll_shared) => {}
            }
        });
        stop.cancelled().await;
        // Every worker's event loop stays up until all sessions are done: a pooled backend
        // connection may be driven by another worker's loop than the session using it.
        // Read now, not at start: LOAD MYSQL VARIABLES TO RUNTIME may have changed it.
        let grace = shared.runtime.load().mysql.shutdown_grace_period;
        if tokio::time::timeout(grace, tracker.wait()).await.is_err() && index == 0 {
            tracing::warn!(
                sessions = shared.registry.len(),
                "grace period of {grace:?} over: closing the remaining sessions"
            );
        }
    });
    rt.shutdown_timeout(Duration::from_millis(100));
}

/// How often housekeeping runs.
const HOUSEKEEPING_INTERVAL: Duration = Duration::from_secs(1);

/// How long a backend connection over mysql-free_connections_pct may sit idle before it is
/// closed: long enough that a burst of statements reuses it rather than reconnecting.
const IDLE_TRIM_AFTER: Duration = Duration::from_secs(1);

/// Every [`HOUSEKEEPING_INTERVAL`] until weir stops: drops expired query cache entries (replies
/// nobody asks for again would otherwise hold memory until evicted) and closes idle backend
/// connections over mysql-free_connections_pct.
async fn housekeeping(
    cache: Arc<weir_cache::QueryCache>,
    pool: Arc<Pool>,
    stop: CancellationToken,
) {
    let mut tick = tokio::time::interval(HOUSEKEEPING_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.cancelled() => return,
        }
        cache.purge_expired(std::time::Instant::now());
        let closed = pool.trim_idle(IDLE_TRIM_AFTER);
        if closed > 0 {
            tracing::debug!(
                closed,
                "idle backend connections over mysql-free_connections_pct closed"
            );
        }
    }
}

/// The admin interface runs on its own thread and event loop, apart from client traffic, so
/// a slow or huge admin query never delays a client's statement. Housekeeping (the query
/// cache and the pool's `chores`) runs there too, for the same reason.
fn admin_thread(
    listeners: Vec<(weir_config::ListenAddr, listen::Listener)>,
    mut changes: tokio::sync::mpsc::UnboundedReceiver<control::IfaceChange>,
    admin: Arc<weir_admin::Admin>,
    chores: (Arc<weir_cache::QueryCache>, Arc<Pool>),
    stop: CancellationToken,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(4)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the admin event loop");
            return;
        }
    };
    rt.block_on(async {
        // The addresses listened on, each with what stops its accept loop and its socket file.
        let mut open: Vec<(weir_config::ListenAddr, CancellationToken, Option<PathBuf>)> =
            Vec::new();
        let start = |addr, l: listen::Listener, open: &mut Vec<_>| {
            let path = match &l {
                listen::Listener::Unix(_, p) => Some(p.clone()),
                listen::Listener::Tcp(_) => None,
            };
            match l.into_tokio() {
                Ok(l) => {
                    let accepting = stop.child_token();
                    tokio::spawn(listen::admin_accept_loop(
                        l,
                        admin.clone(),
                        accepting.clone(),
                        stop.clone(),
                    ));
                    open.push((addr, accepting, path));
                }
                Err(e) => tracing::error!(error = %e, "cannot register an admin listener"),
            }
        };
        for (addr, l) in listeners {
            start(addr, l, &mut open);
        }
        tokio::spawn(housekeeping(chores.0, chores.1, stop.clone()));
        loop {
            tokio::select! {
                _ = stop.cancelled() => break,
                Some(change) = changes.recv() => {
                    for addr in change.remove {
                        let Some(i) = open.iter().position(|(a, ..)| *a == addr) else {
                            continue;
                        };
                        let (addr, accepting, path) = open.swap_remove(i);
                        accepting.cancel();
                        if let Some(p) = path {
                            let _ = std::fs::remove_file(p);
                        }
                        tracing::info!(address = %addr, "admin interface: no longer listening (admin-mysql_ifaces)");
                    }
                    for (addr, l) in change.add {
                        start(addr, l, &mut open);
                    }
                }
            }
        }
        for (_, _, path) in open {
            if let Some(p) = path {
                let _ = std::fs::remove_file(p);
            }
        }
    });
    rt.shutdown_timeout(Duration::from_millis(500));
}

async fn wait_for_signal(
    term: std::io::Result<tokio::signal::unix::Signal>,
    int: std::io::Result<tokio::signal::unix::Signal>,
) {
    match (term, int) {
        (Ok(mut t), Ok(mut i)) => {
            tokio::select! {
                _ = t.recv() => {}
                _ = i.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
