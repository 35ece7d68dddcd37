//! A real PostgreSQL server for tests: Debian's `postgresql` binaries, a fresh cluster (`initdb`) in a temporary
//! directory, listening on 127.0.0.1 only at a free port, its unix socket inside that directory, `trust`
//! authentication, fsync off. Stopped and removed when dropped, also when the test panics.
//!
//! Self-contained (std and tempfile only), so that other test crates can include it:
//! `#[path = "../crates/history/tests/support/postgres.rs"] mod postgres;`.
//!
//! ```ignore
//! let server = match postgres::PgServer::start() {
//!     Ok(server) => server,
//!     Err(why) => return eprintln!("skipped: {why}"),
//! };
//! let url = server.create_database("t1")?; // postgres://postgres@127.0.0.1:PORT/t1
//! ```
//!
//! The binaries are found through `LOADGATE_PG_BIN` (the directory holding `initdb`, `postgres`, `pg_ctl`,
//! `pg_isready` and `psql`), else the newest `/usr/lib/postgresql/*/bin`. PostgreSQL refuses to run as root: as
//! root, the server runs as the user `postgres` (or `LOADGATE_PG_USER`) through `setpriv` (or `runuser`), with the
//! temporary directory given to that user.

#![allow(dead_code, reason = "each test crate that includes the harness uses a part of it")]

use std::fs::File;
use std::io::Read as _;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to accept connections before the harness gives up on it (a loaded CI machine
/// takes seconds; this only keeps a broken install from hanging the tests).
const READY_WITHIN: Duration = Duration::from_secs(180);

/// Attempts at a free port (another process may take the port between the probe and the server's bind).
const PORT_ATTEMPTS: usize = 10;

/// The directory of PostgreSQL's binaries: `LOADGATE_PG_BIN`, else the newest `/usr/lib/postgresql/*/bin` that
/// holds `initdb`. `Err` says why there is none (the tests that need one skip, saying so).
pub fn bin_dir() -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("LOADGATE_PG_BIN").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return if dir.join("initdb").is_file() {
            Ok(dir)
        } else {
            Err(format!("LOADGATE_PG_BIN={} has no initdb", dir.display()))
        };
    }
    let root = Path::new("/usr/lib/postgresql");
    let entries = std::fs::read_dir(root).map_err(|_| {
        "PostgreSQL is not installed (no /usr/lib/postgresql; apt-get install postgresql, or set LOADGATE_PG_BIN)"
            .to_owned()
    })?;
    let mut found: Vec<(Vec<u64>, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path().join("bin"))
        .filter(|bin| bin.join("initdb").is_file())
        .map(|bin| {
            let version = bin
                .parent()
                .and_then(Path::file_name)
                .map(|v| v.to_string_lossy().split('.').map(|p| p.parse().unwrap_or(0)).collect())
                .unwrap_or_default();
            (version, bin)
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin).ok_or_else(|| {
        "no initdb under /usr/lib/postgresql/*/bin (apt-get install postgresql, or set LOADGATE_PG_BIN)".to_owned()
    })
}

/// A PostgreSQL server of its own, for one test.
pub struct PgServer {
    bin: PathBuf,
    /// Holds `data/` (the cluster), `socket/` and `server.log`.
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
    /// The user the server runs as when the tests run as root.
    user: Option<String>,
}

impl PgServer {
    /// Makes a cluster and starts its server; `Err` says why it could not (no PostgreSQL installed, initdb or
    /// the server failed: with their output).
    pub fn start() -> Result<PgServer, String> {
        let bin = bin_dir()?;
        let root = std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false);
        let user =
            if root { Some(std::env::var("LOADGATE_PG_USER").unwrap_or_else(|_| "postgres".to_owned())) } else { None };
        // As root, the server's user must reach the directory: under /tmp rather than a TMPDIR it may not enter.
        let mut builder = tempfile::Builder::new();
        builder.prefix("loadgate-pg-");
        let dir = if root { builder.tempdir_in("/tmp") } else { builder.tempdir() }
            .map_err(|e| format!("cannot make a temporary directory: {e}"))?;
        std::fs::create_dir(dir.path().join("socket")).map_err(|e| format!("cannot make the socket directory: {e}"))?;
        let mut server = PgServer { bin, dir, port: 0, child: None, user };
        if let Some(user) = &server.user {
            let id = |flag: &str| -> Result<u32, String> {
                let out =
                    Command::new("id").args([flag, user]).output().map_err(|e| format!("id {flag} {user}: {e}"))?;
                String::from_utf8_lossy(&out.stdout)
                    .trim()
                    .parse()
                    .map_err(|_| format!("the user {user} does not exist (PostgreSQL will not run as root)"))
            };
            let (uid, gid) = (id("-u")?, id("-g")?);
            for path in [server.dir.path().to_path_buf(), server.dir.path().join("socket")] {
                std::os::unix::fs::chown(&path, Some(uid), Some(gid))
                    .map_err(|e| format!("cannot give {} to {user}: {e}", path.display()))?;
            }
        }
        let data = server.data_dir();
        let out = server
            .command("initdb")
            .arg("-D")
            .arg(&data)
            .args(["-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"])
            .output()
            .map_err(|e| format!("cannot run initdb: {e}"))?;
        if !out.status.success() {
            return Err(format!("initdb failed ({}): {}", out.status, output_text(&out)));
        }
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port()?;
            match server.run_at(port) {
                Ok(()) => return Ok(server),
                Err(why) => last = why,
            }
        }
        Err(last)
    }

    /// Starts the server on a port and waits until it accepts connections.
    fn run_at(&mut self, port: u16) -> Result<(), String> {
        let log_path = self.dir.path().join("server.log");
        let log = File::create(&log_path).map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
        let log_err = log.try_clone().map_err(|e| format!("cannot share the log: {e}"))?;
        let socket = self.dir.path().join("socket");
        let mut command = self.command("postgres");
        command
            .arg("-D")
            .arg(self.data_dir())
            .arg("-p")
            .arg(port.to_string())
            .arg("-k")
            .arg(&socket)
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
            .args(["-c", "max_connections=100", "-c", "shared_buffers=16MB", "-c", "logging_collector=off"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err);
        let child = command.spawn().map_err(|e| format!("cannot start postgres: {e}"))?;
        self.child = Some(child);
        self.port = port;
        let started = Instant::now();
        loop {
            if let Some(child) = &mut self.child {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(format!("postgres exited ({status}): {}", self.log()));
                }
            }
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-p", &port.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_err(|e| format!("cannot run pg_isready: {e}"))?;
            if ready.success() {
                return Ok(());
            }
            if started.elapsed() > READY_WITHIN {
                self.stop();
                return Err(format!("postgres did not accept connections within {READY_WITHIN:?}: {}", self.log()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A command running one of the binaries, as the server's user when the tests run as root.
    fn command(&self, program: &str) -> Command {
        let path = self.bin.join(program);
        let mut command = match &self.user {
            Some(user) if Path::new("/usr/bin/setpriv").exists() || which("setpriv") => {
                let mut c = Command::new("setpriv");
                c.arg(format!("--reuid={user}")).arg(format!("--regid={user}")).arg("--init-groups").arg("--");
                c.arg(path);
                c
            }
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(path);
                c
            }
            None => Command::new(path),
        };
        command.current_dir(self.dir.path()).env("LC_ALL", "C").env_remove("PGDATA");
        command
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        let mut text = String::new();
        if let Ok(mut f) = File::open(self.dir.path().join("server.log")) {
            let _ = f.read_to_string(&mut text);
        }
        text
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory of the server's unix socket.
    pub fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("socket")
    }

    /// `postgres://postgres@127.0.0.1:PORT/DB` (no password: trust authentication).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Runs SQL with `psql` in a database, returning its unaligned output (`-At`), or why it failed.
    pub fn psql(&self, db: &str, sql: &str) -> Result<String, String> {
        let out = Command::new(self.bin.join("psql"))
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-U", "postgres"])
            .args(["-p", &self.port.to_string(), "-d", db, "-c", sql])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run psql: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!("psql -c {sql:?} failed ({}): {}", out.status, output_text(&out)))
        }
    }

    /// Creates a database (a plain name: letters, digits, `_`) and returns its URL.
    pub fn create_database(&self, name: &str) -> Result<String, String> {
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`{name}` is not a plain database name"));
        }
        self.psql("postgres", &format!("CREATE DATABASE \"{name}\""))?;
        Ok(self.url(name))
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`), killing it if that fails.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let stopped = self
            .command("pg_ctl")
            .arg("stop")
            .arg("-D")
            .arg(self.data_dir())
            .args(["-m", "immediate", "-w"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !stopped {
            let _ = child.kill();
        }
        let _ = child.wait();
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A port nothing listens on now (the OS's pick for port 0 on 127.0.0.1).
fn free_port() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot bind 127.0.0.1:0: {e}"))?;
    listener.local_addr().map(|a| a.port()).map_err(|e| format!("no local address: {e}"))
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|p| p.join(program).is_file()))
        .unwrap_or(false)
}

fn output_text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)).trim().to_owned()
}
