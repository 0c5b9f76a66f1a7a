//! The `weir` binary: command line, logging, and the process lifecycle.

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc rather than glibc's malloc: measured with bench/run.sh's weirb target (see
/// bench/RESULTS.md, 2026-11-24), 3–4 % less CPU per query and less memory per idle client, for
/// about 11 MB more at start.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// weir: a SQL-aware proxy for MySQL and MariaDB.
#[derive(Parser, Debug)]
#[command(name = "weir", version, about)]
struct Cli {
    /// Configuration file (TOML, ProxySQL section and key names).
    #[arg(short = 'c', long = "config", global = true)]
    config: Option<PathBuf>,
    /// Data directory (admin database, sockets); overrides `datadir` of the file.
    #[arg(short = 'D', long = "datadir")]
    datadir: Option<PathBuf>,
    /// Re-seed the database from the configuration file even when one exists.
    #[arg(long)]
    initial: bool,
    #[command(subcommand)]
    command: Option<Cmd>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Validates a configuration file, printing every error with its key path.
    CheckConfig,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let Some(config) = cli.config.clone() else {
        eprintln!("weir: a configuration file is required: weir -c weir.toml -D DATADIR");
        return ExitCode::from(2);
    };
    if let Some(Cmd::CheckConfig) = cli.command {
        let checked = weir_config::validate_file(&config).and_then(|rt| {
            // Rules are compiled by the proxy, not the config crate: a regex that does not
            // compile is a configuration error too.
            match weir_server::compile_rules(&rt) {
                Ok(_) => Ok(rt),
                Err(problems) => Err(weir_config::ConfigErrors(
                    problems
                        .into_iter()
                        .map(|p| weir_config::ConfigError::new("mysql_query_rules", p))
                        .collect(),
                )),
            }
        });
        return match checked {
            Ok(rt) => {
                for w in &rt.warnings {
                    println!("warning: {w}");
                }
                println!("{}: configuration OK", config.display());
                ExitCode::SUCCESS
            }
            Err(mut errors) => {
                // Rules compile only once the file is valid: compile the rows that parsed so
                // that a bad regular expression is reported with the other errors.
                let rule_errors = weir_config::tables_as_parsed(&config)
                    .and_then(|t| weir_rules::CompiledRules::compile(&t.mysql_query_rules).err())
                    .unwrap_or_default();
                let reported: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
                for p in rule_errors {
                    let line = p.to_string();
                    if !reported.iter().any(|r| r.contains(&line)) {
                        errors
                            .0
                            .push(weir_config::ConfigError::new("mysql_query_rules", line));
                    }
                }
                for e in &errors.0 {
                    eprintln!("{}: {e}", config.display());
                }
                eprintln!("{}: {} error(s)", config.display(), errors.0.len());
                ExitCode::from(1)
            }
        };
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("WEIR_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    match weir_server::run(weir_server::Options {
        config,
        datadir: cli.datadir,
        initial: cli.initial,
    }) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e}");
            eprintln!("weir: {e}");
            ExitCode::from(1)
        }
    }
}
