//! What the server answers with: its configuration ([`ServerBehaviour`]) checked and precomputed
//! ([`Behaviour`]), and the bodies it sends.

use std::time::Duration as StdDuration;

use loadgate_model::units::Duration;
use loadgate_model::BuiltinKind;

use crate::error::ServerError;

/// TechEmpower's plaintext body.
pub const HELLO_WORLD: &[u8] = b"Hello, World!";
/// The largest request body the server reads, and the largest body `/bytes/{n}` and `/chunked/{n}` send.
pub const MAX_BODY: usize = 64 * 1024 * 1024;

/// What the built-in server answers on every path that is not a listed route: the server's own configuration,
/// which `loadgate serve`'s flags give, or the runner from a plan's `target: { builtin: ... }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerBehaviour {
    /// Plaintext, echo or delay.
    pub kind: BuiltinKind,
    /// For `delay`: how long each response waits.
    pub delay: Option<Duration>,
    /// The status every response carries (200 unless set).
    pub status: u16,
    /// For `plaintext` and `delay`: the response body size; `None` is TechEmpower's 13-byte `Hello, World!`.
    pub body_size: Option<u64>,
    /// Send bodies with `Transfer-Encoding: chunked`.
    pub chunked: bool,
    /// For `cpu`: the CPU time each request costs.
    pub work: Option<Duration>,
    /// For `cpu`: CPU time added to each request in a callee of `slow_path`.
    pub slow_path: Option<Duration>,
}

impl Default for ServerBehaviour {
    /// `loadgate serve`'s defaults: TechEmpower's plaintext, status 200, no delay, no work.
    fn default() -> Self {
        ServerBehaviour {
            kind: BuiltinKind::Plaintext,
            delay: None,
            status: 200,
            body_size: None,
            chunked: false,
            work: None,
            slow_path: None,
        }
    }
}

/// The name of a kind as `--kind` takes it.
pub fn kind_name(kind: BuiltinKind) -> &'static str {
    loadgate_model::builtin_kind_name(kind)
}

/// The configured behaviour, precomputed.
#[derive(Debug)]
pub(crate) struct Behaviour {
    pub(crate) kind: BuiltinKind,
    pub(crate) status: u16,
    pub(crate) delay: Option<StdDuration>,
    pub(crate) chunked: bool,
    /// The body of plaintext and delay responses.
    pub(crate) body: Vec<u8>,
    /// For `cpu`: each request's CPU work and its slow path's.
    pub(crate) burn: Option<(StdDuration, StdDuration)>,
}

impl Behaviour {
    pub(crate) fn new(s: &ServerBehaviour) -> Result<Self, ServerError> {
        if !(200..=599).contains(&s.status) {
            return Err(ServerError::InvalidServer(format!(
                "status {} is not a final HTTP status; use one from 200 to 599",
                s.status
            )));
        }
        if s.kind == BuiltinKind::Delay && s.delay.is_none() {
            return Err(ServerError::InvalidServer("the `delay` kind needs a delay, such as `20ms`".to_owned()));
        }
        if s.kind != BuiltinKind::Delay && s.delay.is_some_and(|d| !d.as_std().is_zero()) {
            return Err(ServerError::InvalidServer(format!(
                "a delay applies to the `delay` kind only, and this server is `{}`; use `--kind delay --delay 20ms`, \
                 or request the `/delay/{{ms}}` route, which every kind answers",
                kind_name(s.kind)
            )));
        }
        if s.kind == BuiltinKind::Cpu && s.work.is_none() {
            return Err(ServerError::InvalidServer("the `cpu` kind needs its work, such as `--work 50us`".to_owned()));
        }
        if s.kind != BuiltinKind::Cpu && (s.work.is_some() || s.slow_path.is_some()) {
            return Err(ServerError::InvalidServer(format!(
                "work and a slow path apply to the `cpu` kind only, and this server is `{}`",
                kind_name(s.kind)
            )));
        }
        if s.kind == BuiltinKind::Echo && s.body_size.is_some() {
            return Err(ServerError::InvalidServer(
                "a body size applies to the `plaintext` and `delay` kinds; `echo` sends the request's body back \
                 (request the `/bytes/{n}` route for an n-byte body)"
                    .to_owned(),
            ));
        }
        let body = match s.body_size {
            None => HELLO_WORLD.to_vec(),
            Some(n) => {
                let n = usize::try_from(n).ok().filter(|n| *n <= MAX_BODY).ok_or_else(|| {
                    ServerError::InvalidServer(format!("a body of {n} bytes is above the 64 MiB the server sends"))
                })?;
                pattern(n)
            }
        };
        Ok(Behaviour {
            kind: s.kind,
            status: s.status,
            delay: s.delay.map(Duration::as_std).filter(|d| !d.is_zero()),
            chunked: s.chunked,
            body,
            burn: s.work.map(|w| (w.as_std(), s.slow_path.map_or(StdDuration::ZERO, Duration::as_std))),
        })
    }
}

/// `n` bytes of `Hello, World! ` repeated.
pub(crate) fn pattern(n: usize) -> Vec<u8> {
    b"Hello, World! ".iter().copied().cycle().take(n).collect()
}
