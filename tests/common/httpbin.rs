//! httpbin (the Python service, <https://github.com/psf/httpbin>) served by gunicorn on loopback, for the end-to-end
//! tests of response checks (`tests/checks.rs`): a server nobody here wrote, with logins, cookies, redirects and
//! JSON, XML and HTML bodies. gunicorn binds port 0 and says which port it got; its access log counts the requests
//! that reached it. Stopped (its whole process group killed) when dropped, also when the test panics.
//!
//! Self-contained (std and tempfile only). Include it with `#[path = "common/httpbin.rs"] mod httpbin;`.
//!
//! ```ignore
//! let Some(httpbin) = httpbin::Httpbin::start() else { return }; // skipped, and said why
//! let url = httpbin.url(); // http://127.0.0.1:PORT
//! let log = httpbin.requests_at_least(21); // [Access { method: "GET", path: "/bearer", status: 200 }, ...]
//! ```
//!
//! Python is `LOADGATE_HTTPBIN_PYTHON` (a Python with the `httpbin` and `gunicorn` packages; `.ci/run` sets it, and
//! a Python there that cannot import them fails the tests), else a `python3` on the PATH that imports both; without
//! one the tests skip, saying so. gunicorn runs one `gthread` worker with 8 threads and a 30-second keep-alive
//! (`sync` workers close the connection after every response, and a session's steps share one connection).

#![allow(dead_code, reason = "each test crate that includes the harness uses a part of it")]

use std::fs::File;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long gunicorn may take to listen and boot its worker before the harness gives up (a loaded CI machine takes
/// seconds; this only keeps a broken install from hanging the tests). Not a bound on anything measured.
const READY_WITHIN: Duration = Duration::from_secs(180);

/// How long [`Httpbin::requests_at_least`] waits for the access log to hold the lines asked for. gunicorn writes a
/// line after the response has gone out, so a client may have its response a moment before the line is written.
const LOG_WITHIN: Duration = Duration::from_secs(30);

/// What gunicorn writes per request: the status, then the request line in quotes (`200 "GET /json HTTP/1.1"`).
const ACCESS_LOG_FORMAT: &str = r#"%(s)s "%(r)s""#;

/// Asks the Python for the two packages, gunicorn's version and whether it has a control socket (gunicorn 27 opens
/// one at `~/.gunicorn/gunicorn.ctl` by default, which the servers of tests running in parallel would share).
const PROBE: &str = "import httpbin, gunicorn, gunicorn.config as c\n\
print(gunicorn.__version__)\n\
print(any(getattr(s, 'name', '') == 'control_socket_disable' for s in c.KNOWN_SETTINGS))\n";

/// One line of the access log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access {
    pub method: String,
    /// The request target as sent: path and query (`/cookies/set?sid=u1`).
    pub path: String,
    pub status: u16,
}

/// A gunicorn serving httpbin, for one test.
pub struct Httpbin {
    /// Holds `access.log` and `gunicorn.log` (gunicorn's own output).
    dir: tempfile::TempDir,
    port: u16,
    child: Option<Child>,
}

/// The Python to run httpbin with, and whether its gunicorn has a control socket to turn off. `Err` says why there
/// is none (the tests skip); a `LOADGATE_HTTPBIN_PYTHON` that cannot import the packages panics instead.
fn python() -> Result<(PathBuf, bool), String> {
    let probe = |python: &Path| -> Result<bool, String> {
        let out = Command::new(python)
            .args(["-c", PROBE])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} cannot import httpbin and gunicorn ({}): {}",
                python.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).lines().nth(1) == Some("True"))
    };
    if let Some(python) = std::env::var_os("LOADGATE_HTTPBIN_PYTHON").filter(|p| !p.is_empty()) {
        let python = PathBuf::from(python);
        return match probe(&python) {
            Ok(control) => Ok((python, control)),
            Err(why) => panic!("LOADGATE_HTTPBIN_PYTHON is set, but {why}"),
        };
    }
    let python = PathBuf::from("python3");
    probe(&python).map(|control| (python, control)).map_err(|why| {
        format!(
            "LOADGATE_HTTPBIN_PYTHON is not set and {why} (pip install httpbin gunicorn, or set \
             LOADGATE_HTTPBIN_PYTHON to a Python that has them)"
        )
    })
}

impl Httpbin {
    /// Starts gunicorn with httpbin on a free port of 127.0.0.1 and waits until its worker booted. `None` (printed
    /// as `SKIPPED: ...`) when no Python has httpbin and gunicorn; panics when they are there but do not start.
    pub fn start() -> Option<Httpbin> {
        let (python, control_socket) = match python() {
            Ok(found) => found,
            Err(why) => {
                eprintln!("SKIPPED: {why}");
                return None;
            }
        };
        let dir = tempfile::Builder::new().prefix("loadgate-httpbin-").tempdir().expect("a temporary directory");
        let log = File::create(dir.path().join("gunicorn.log")).expect("create gunicorn.log");
        let log_err = log.try_clone().expect("share gunicorn.log");
        let mut command = Command::new(&python);
        command
            .args(["-m", "gunicorn", "--bind", "127.0.0.1:0", "--worker-class", "gthread", "--threads", "8"])
            .args(["--workers", "1", "--keep-alive", "30", "--access-logfile"])
            .arg(dir.path().join("access.log"))
            .args(["--access-logformat", ACCESS_LOG_FORMAT]);
        if control_socket {
            command.arg("--no-control-socket");
        }
        command
            .arg("httpbin:app")
            .current_dir(dir.path())
            .env("PYTHONUNBUFFERED", "1")
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log_err)
            // Its own process group: the arbiter and its worker go together on drop.
            .process_group(0);
        let child = command.spawn().unwrap_or_else(|e| panic!("cannot start {} -m gunicorn: {e}", python.display()));
        let mut server = Httpbin { dir, port: 0, child: Some(child) };
        let started = Instant::now();
        loop {
            let text = server.log();
            if server.port == 0 {
                server.port = listening_port(&text).unwrap_or(0);
            }
            // The socket listens from the arbiter's start; requests wait in its backlog until the worker booted.
            if server.port != 0 && text.contains("Booting worker") {
                return Some(server);
            }
            if let Some(child) = &mut server.child {
                if let Ok(Some(status)) = child.try_wait() {
                    server.child = None;
                    panic!("gunicorn exited ({status}) before it listened:\n{text}");
                }
            }
            if started.elapsed() > READY_WITHIN {
                panic!("gunicorn did not boot its worker within {READY_WITHIN:?}:\n{text}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `http://127.0.0.1:PORT`, for `--set url=`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// gunicorn's own output so far (its start, the worker's boot, errors).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("gunicorn.log")).unwrap_or_default()
    }

    /// Every request in the access log so far, in the order gunicorn wrote them.
    pub fn access_log(&self) -> Vec<Access> {
        std::fs::read_to_string(self.dir.path().join("access.log"))
            .unwrap_or_default()
            .lines()
            .filter_map(parse_access)
            .collect()
    }

    /// The access log once it holds at least `n` requests: polled, since gunicorn writes a line after the response
    /// went out. After a bounded wait (a broken server, or fewer requests than expected) it returns what is there,
    /// for the test's assertion to show.
    pub fn requests_at_least(&self, n: usize) -> Vec<Access> {
        let started = Instant::now();
        loop {
            let log = self.access_log();
            if log.len() >= n || started.elapsed() > LOG_WITHIN {
                return log;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills gunicorn's process group (the arbiter and its worker) and reaps the arbiter.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let killed = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !killed {
            let _ = child.kill();
        }
        let _ = child.wait();
    }
}

impl Drop for Httpbin {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The port of gunicorn's `Listening at: http://127.0.0.1:PORT (PID)` line (printed from `getsockname`).
fn listening_port(log: &str) -> Option<u16> {
    log.lines().find_map(|line| {
        let rest = &line[line.find("Listening at: http://127.0.0.1:")? + "Listening at: http://127.0.0.1:".len()..];
        rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok().filter(|p| *p != 0)
    })
}

/// `200 "GET /json HTTP/1.1"`, as [`ACCESS_LOG_FORMAT`] writes it.
fn parse_access(line: &str) -> Option<Access> {
    let (status, rest) = line.trim().split_once(' ')?;
    let request = rest.strip_prefix('"')?.strip_suffix('"')?;
    let mut words = request.split(' ');
    let (method, path) = (words.next()?, words.next()?);
    Some(Access { method: method.to_owned(), path: path.to_owned(), status: status.parse().ok()? })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_port_and_the_access_lines() {
        let log = "[2026-11-28 01:37:50 +0000] [15128] [INFO] Starting gunicorn 27.0.1\n\
                   [2026-11-28 01:37:50 +0000] [15128] [INFO] Listening at: http://127.0.0.1:43803 (15128)\n";
        assert_eq!(listening_port(log), Some(43803));
        assert_eq!(listening_port("[INFO] Starting gunicorn"), None);
        assert_eq!(
            parse_access(r#"302 "GET /cookies/set?sid=u1 HTTP/1.1""#),
            Some(Access { method: "GET".into(), path: "/cookies/set?sid=u1".into(), status: 302 })
        );
        assert_eq!(parse_access("garbage"), None);
    }
}
